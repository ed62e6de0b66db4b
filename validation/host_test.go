package validation

import (
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestValidateHost(t *testing.T) {
	key := ed25519Key(t, "")
	good := model.HostSpec{Name: "h1", Address: "10.0.0.1", Port: 2222, User: "ops", SSHKey: key, Labels: map[string]string{"rack": "a1"}}
	cases := []struct {
		name        string
		edit        func(*model.HostSpec)
		keyRequired bool
		want        []string
		reason      string
	}{
		{"good", func(*model.HostSpec) {}, true, nil, ""},
		{"update keeps the key", func(h *model.HostSpec) { h.SSHKey = "" }, false, nil, ""},
		{"key required", func(h *model.HostSpec) { h.SSHKey = "" }, true, []string{"sshKey"}, "is required"},
		{"bad name", func(h *model.HostSpec) { h.Name = "Host_1" }, true, []string{"name"}, "DNS-1123"},
		{"reserved name", func(h *model.HostSpec) { h.Name = "commands" }, true, []string{"name"}, "reserved"},
		{"no address", func(h *model.HostSpec) { h.Address = "" }, true, []string{"address"}, "is required"},
		{"name as address", func(h *model.HostSpec) { h.Address = "host.example.com" }, true, []string{"address"}, "not an IP"},
		{"unspecified", func(h *model.HostSpec) { h.Address = "0.0.0.0" }, true, []string{"address"}, "not a host's address"},
		{"port", func(h *model.HostSpec) { h.Port = 65536 }, true, []string{"port"}, "not a TCP port"},
		{"user with a shell metacharacter", func(h *model.HostSpec) { h.User = "root;id" }, true, []string{"user"}, ""},
		{"a public key", func(h *model.HostSpec) { h.SSHKey = "ssh-ed25519 AAAA" }, true, []string{"sshKey"}, "PEM"},
		{"label", func(h *model.HostSpec) { h.Labels = map[string]string{"bad key!": "v"} }, true, []string{`labels["bad key!"]`}, "may contain only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := good
			tc.edit(&h)
			err := ValidateHost(h, tc.keyRequired)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateHost = %v, want nil", err)
				}
				return
			}
			checkViolations(t, err, tc.want, tc.reason)
		})
	}
}
