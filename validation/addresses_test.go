package validation

import (
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Link-local and metadata addresses are refused for hosts, in every
// spelling, unless the policy allows them or the host already had it.
func TestAddressPolicyHosts(t *testing.T) {
	for _, tc := range []struct {
		name, addr, stored string
		allow              bool
		refused            bool
	}{
		{"routable", "10.0.0.11", "", false, false},
		{"metadata v4", "169.254.169.254", "", false, true},
		{"link-local v4", "169.254.1.2", "", false, true},
		{"IPv4-mapped", "::ffff:169.254.169.254", "", false, true},
		{"IPv4-mapped hex", "::ffff:a9fe:a9fe", "", false, true},
		{"link-local v6", "fe80::1", "", false, true},
		{"link-local v6 upper range", "febf::1", "", false, true},
		{"aws metadata v6", "fd00:ec2::254", "", false, true},
		{"alibaba metadata", "100.100.100.200", "", false, true},
		{"allowed by the flag", "169.254.169.254", "", true, false},
		{"kept from before", "169.254.1.2", "169.254.1.2", false, false},
		{"moved to link-local", "169.254.1.2", "10.0.0.11", false, true},
		{"not an IP: ValidateHost's", "host.example", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := model.HostSpec{Name: "h1", Address: tc.addr, SSHKey: ed25519Key(t, "")}
			err := AddressPolicy{AllowLinkLocal: tc.allow}.CheckHost(ValidateHost(spec, true), tc.addr, tc.stored)
			refused := false
			for _, fe := range fieldErrors(t, err) {
				if fe.Field == "address" && strings.Contains(fe.Reason, AllowLinkLocalFlag) {
					refused = true
				}
			}
			if refused != tc.refused {
				t.Errorf("CheckHost(%s) = %v, want refused %v", tc.addr, err, tc.refused)
			}
		})
	}
}

// Node addresses are refused at their index, after the other violations;
// the nodes an existing cluster already had are kept.
func TestAddressPolicyNodes(t *testing.T) {
	c := validCluster(t)
	c.Nodes[1].Address = "169.254.0.7"
	c.Nodes[2].Address = "fe80::7"
	errs := fieldErrors(t, AddressPolicy{}.CheckNodes(ValidateCreate(c), c.Nodes, nil))
	if got := strings.Join(errs.Fields(), ","); got != "nodes[1].address,nodes[2].address" {
		t.Fatalf("fields %s (%v), want nodes[1] and nodes[2]", got, errs)
	}
	if !strings.Contains(errs[0].Reason, "--allow-link-local-hosts") || !strings.Contains(errs[0].Reason, "SINGLECLOUD_ALLOW_LINK_LOCAL_HOSTS") {
		t.Errorf("reason %q does not say which flag allows it", errs[0].Reason)
	}
	if err := (AddressPolicy{AllowLinkLocal: true}).CheckNodes(ValidateCreate(c), c.Nodes, nil); err != nil {
		t.Errorf("with the flag: %v", err)
	}

	c.Name = ""
	errs = fieldErrors(t, AddressPolicy{}.CheckNodes(ValidateCreate(c), c.Nodes, nil))
	if got := strings.Join(errs.Fields(), ","); got != "name,nodes[1].address,nodes[2].address" {
		t.Errorf("fields %s, want the name's violation kept before the addresses'", got)
	}

	old := validCluster(t)
	old.Nodes[1].Address = "169.254.0.7"
	updated := validCluster(t)
	updated.Nodes[1].Address = "169.254.0.7"
	updated.Nodes = append(updated.Nodes, withDefaults(model.Node{Name: "n4", Address: "169.254.0.8", Roles: roles(worker)}))
	errs = fieldErrors(t, AddressPolicy{}.CheckNodes(ValidateUpdate(old, updated), updated.Nodes, old.Nodes))
	if got := strings.Join(errs.Fields(), ","); got != "nodes[3].address" {
		t.Errorf("update: fields %s, want only the new node's", got)
	}
}
