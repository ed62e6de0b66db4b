package kubeconfig

import (
	"errors"
	"strings"
	"testing"
)

// TestDuplicateKeysAreRefused: a key set twice (an exec plugin, or a user
// hidden behind a second one the decoder would keep) and a merge key are
// refused with the field they concern, never quoting the kubeconfig.
func TestDuplicateKeysAreRefused(t *testing.T) {
	head := "clusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\"}}]\n" +
		"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	for _, tc := range []struct {
		name, users, field string
	}{
		{"exec twice, the last null", "users:\n- name: u\n  user:\n    exec: {command: sh, args: [-c, id]}\n    exec: null\n    token: " + secretToken + "\n",
			"kubeconfig.users[0].user.exec"},
		{"exec and Exec", "users:\n- name: u\n  user:\n    exec: {command: sh}\n    Exec: null\n    token: " + secretToken + "\n",
			"kubeconfig.users[0].user.Exec"},
		{"an exec hidden by a second user", "users:\n- name: u\n  user:\n    exec: {command: sh}\n  user:\n    token: " + secretToken + "\n",
			"kubeconfig.users[0].user"},
		{"auth-provider twice", "users:\n- name: u\n  user: {auth-provider: {name: gcp}, auth-provider: null, token: " + secretToken + "}\n",
			"kubeconfig.users[0].user.auth-provider"},
		{"a merge key", "plugin: &p {exec: {command: sh}}\nusers:\n- name: u\n  user:\n    <<: *p\n    token: " + secretToken + "\n",
			"kubeconfig.users[0].user.<<"},
		{"a key that is not a name", "users:\n- name: u\n  user: {token: " + secretToken + ", " + secretPassword + ": 1, " + secretPassword + ": 2}\n",
			"kubeconfig.users[0].user.<key on line 6>"},
		{"JSON", `{"clusters":[{"name":"c","cluster":{"server":"https://h"}}],"users":[{"name":"u","user":{"exec":{"command":"sh"},"exec":null,"token":"` + secretToken + `"}}],` +
			`"contexts":[{"name":"x","context":{"cluster":"c","user":"u"}}],"current-context":"x"}`, "kubeconfig.users[0].user.exec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := head + tc.users
			if strings.HasPrefix(tc.users, "{") {
				data = tc.users
			}
			cfg, err := Parse([]byte(data))
			var errs Errors
			if cfg != nil || !errors.Is(err, ErrInvalid) || !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, %v; want refused", cfg, err)
			}
			found := false
			for _, fe := range errs {
				found = found || fe.Field == tc.field
			}
			if !found {
				t.Errorf("errors %v do not name %s", err, tc.field)
			}
			if msg := err.Error(); strings.Contains(msg, secretToken) || strings.Contains(msg, secretPassword) || strings.Contains(msg, "sh") && strings.Contains(msg, "command") {
				t.Errorf("the error quotes the kubeconfig: %s", msg)
			}
		})
	}
	// Keys that differ are fine, JSON with tabs too.
	ok := "{\n\t\"clusters\": [{\"name\": \"c\", \"cluster\": {\"server\": \"https://h\"}}],\n\t\"users\": [{\"name\": \"u\", \"user\": {\"token\": \"t\"}}],\n" +
		"\t\"contexts\": [{\"name\": \"x\", \"context\": {\"cluster\": \"c\", \"user\": \"u\"}}],\n\t\"current-context\": \"x\"\n}\n"
	if _, err := Parse([]byte(ok)); err != nil {
		t.Errorf("a plain kubeconfig: %v", err)
	}
}
