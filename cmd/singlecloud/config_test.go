package main

import (
	"strings"
	"testing"
)

func TestParseConfigActions(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		args    []string
		want    action
		wantErr string
	}{
		{nil, actionServe, ""},
		{[]string{"--help"}, actionHelp, ""},
		{[]string{"-h"}, actionHelp, ""},
		{[]string{"--version"}, actionVersion, ""},
		{[]string{"--listen", ":9090", "--version"}, actionVersion, ""},
		{[]string{"--bogus"}, actionServe, "flag provided but not defined: -bogus"},
		{[]string{"extra"}, actionServe, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			c, err := parseConfig(tt.args, noEnv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "-listen") {
					t.Fatalf("error = %v; want %q and the usage", err, tt.wantErr)
				}
				return
			}
			if err != nil || c.Action != tt.want {
				t.Fatalf("parseConfig = %+v, %v; want action %d", c, err, tt.want)
			}
		})
	}
	c, _ := parseConfig([]string{"--help"}, noEnv)
	for _, flag := range []string{"-listen", "-db", "-admin-password", "-tls-cert", "-tls-key", "-health-interval", "-log-level", "-version", "SINGLECLOUD_LISTEN", "Usage: singlecloud"} {
		if !strings.Contains(c.Usage, flag) {
			t.Errorf("--help does not explain %s:\n%s", flag, c.Usage)
		}
	}
}

func TestVersionText(t *testing.T) {
	v := buildVersion()
	if v.Version == "" || v.GoVersion == "" {
		t.Fatalf("buildVersion = %+v", v)
	}
	text := versionText(v)
	for _, want := range []string{"singlecloud " + v.Version, "commit: ", "build date: ", "go: go1."} {
		if !strings.Contains(text, want) {
			t.Errorf("version text %q lacks %q", text, want)
		}
	}
}
