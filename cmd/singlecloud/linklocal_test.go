package main

import (
	"strings"
	"testing"
)

// --allow-link-local-hosts is off by default, set by the flag or by
// SINGLECLOUD_ALLOW_LINK_LOCAL_HOSTS; the flag wins.
func TestAllowLinkLocalHostsFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     string
		want    bool
		wantErr string
	}{
		{"default", nil, "", false, ""},
		{"flag", []string{"--allow-link-local-hosts"}, "", true, ""},
		{"env", nil, "true", true, ""},
		{"flag wins", []string{"--allow-link-local-hosts=false"}, "1", false, ""},
		{"bad env", nil, "maybe", false, `allow-link-local-hosts: "maybe" is not true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "SINGLECLOUD_ALLOW_LINK_LOCAL_HOSTS" {
					return tc.env
				}
				return ""
			}
			c, err := parseConfig(tc.args, getenv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || c.AllowLinkLocalHosts != tc.want {
				t.Errorf("AllowLinkLocalHosts = %v, %v; want %v", c.AllowLinkLocalHosts, err, tc.want)
			}
		})
	}
}
