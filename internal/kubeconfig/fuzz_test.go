package kubeconfig

import (
	"errors"
	"net/url"
	"testing"
)

// attackSeeds are the kubeconfig attacks of issue 8, as an attacker would
// paste them.
var attackSeeds = []string{
	`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: sh, args: ["-c", "id > /tmp/pwned; echo {}"]}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
	`clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {tokenFile: /etc/shadow}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
	`clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority: /etc/ssl/ca.pem}}]
users: [{name: u, user: {client-certificate: /root/.kube/admin.crt, client-key: /root/.kube/admin.key}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
	`clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {auth-provider: {name: gcp, config: {cmd-path: /bin/id}}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
	`clusters: [{name: c, cluster: {server: "https://admin:hunter2@127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
	`clusters: [{name: c, cluster: {server: "file:///etc/passwd", proxy-url: "unix:///var/run/docker.sock"}}]
users: [{name: u, user: {Exec: {command: id}, TokenFile: /etc/shadow}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`,
	`clusters: [{name: c, cluster: {server: "https://h", proxy-url: "socks5://u:p@127.0.0.1:1080", tls-server-name: k}}]
users: [{name: u, user: {username: a, password: b, as: bob, as-groups: [g], as-user-extra: {k: [v]}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`,
	"users:\n- name: u\n  user:\n    token: [secret\n",
	"a: &a [*a, *a]\n",
	"not a kubeconfig",
	"",
}

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and
// whatever it accepts must never run a plugin or read a file.
func FuzzParse(f *testing.F) {
	for _, s := range attackSeeds {
		f.Add([]byte(s))
	}
	m := newMaterial(f)
	f.Add(encode(f, m.base()))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		switch {
		case err != nil && cfg != nil:
			t.Fatalf("Parse returned a config and an error: %v", err)
		case err == nil && cfg == nil:
			t.Fatal("Parse returned neither a config nor an error")
		case err != nil:
			// Every refusal is a FieldError list; anything else (the
			// internal check of build's result) is a bug.
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse failed without a field error: %v", err)
			}
			return
		}
		if fields := localAccess(cfg); len(fields) > 0 {
			t.Fatalf("Parse accepted a config that sets %v", fields)
		}
		u, err := url.Parse(cfg.Host)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			t.Fatalf("Parse accepted the server URL %q", RedactURL(cfg.Host))
		}
	})
}
