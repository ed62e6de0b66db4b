package validation

import (
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestValidateControlPlaneEndpoint(t *testing.T) {
	tests := []struct {
		name   string
		vip    string
		want   []string
		reason string
	}{
		{"unused address ok", "10.0.0.200", nil, ""},
		{"empty", "", []string{"controlPlaneEndpoint.vip"}, "is required"},
		{"not an address", "vip.example.com", []string{"controlPlaneEndpoint.vip"}, "not an IPv4 address"},
		{"IPv6", "fd00::10", []string{"controlPlaneEndpoint.vip"}, "not an IPv4 address"},
		{"loopback", "127.0.0.10", []string{"controlPlaneEndpoint.vip"}, "cannot be a host's address"},
		{"multicast", "224.0.0.18", []string{"controlPlaneEndpoint.vip"}, "cannot be a host's address"},
		{"a node's address", "10.0.0.2", []string{"controlPlaneEndpoint.vip"}, `node "n2"`},
		{"in the service network", "10.43.0.10", []string{"controlPlaneEndpoint.vip"}, "inside serviceCidr"},
		{"in the pod network", "10.42.3.4", []string{"controlPlaneEndpoint.vip"}, "inside clusterCidr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			c.ControlPlaneEndpoint = &model.ControlPlaneEndpoint{VIP: tt.vip}
			checkViolations(t, ValidateCreate(c), tt.want, tt.reason)
		})
	}
}

func TestSharedEndpointFreesTheFirstControlPlaneNode(t *testing.T) {
	twoCP := func(t *testing.T, vip string) model.ClusterConfig {
		c := validCluster(t)
		c.Nodes[1].Roles = []model.Role{model.RoleControlPlane, model.RoleEtcd}
		c.Nodes[2].Roles = []model.Role{model.RoleWorker, model.RoleEtcd}
		if vip != "" {
			c.ControlPlaneEndpoint = &model.ControlPlaneEndpoint{VIP: vip}
		}
		return c
	}
	tests := []struct {
		name   string
		vip    string
		edit   func(c *model.ClusterConfig)
		want   []string
		reason string
	}{
		{"remove the first controlplane node without a shared endpoint", "", func(c *model.ClusterConfig) { c.Nodes = c.Nodes[1:] },
			[]string{"nodes"}, "no shared endpoint (controlPlaneEndpoint)"},
		{"remove the first controlplane node with a shared endpoint", "10.0.0.200", func(c *model.ClusterConfig) { c.Nodes = c.Nodes[1:] }, nil, ""},
		{"reorder the controlplane nodes with a shared endpoint", "10.0.0.200", func(c *model.ClusterConfig) {
			c.Nodes[0], c.Nodes[1] = c.Nodes[1], c.Nodes[0]
		}, nil, ""},
		{"change the VIP", "10.0.0.200", func(c *model.ClusterConfig) { c.ControlPlaneEndpoint.VIP = "10.0.0.201" },
			[]string{"controlPlaneEndpoint.vip"}, "cannot change after create"},
		{"add a VIP", "", func(c *model.ClusterConfig) { c.ControlPlaneEndpoint = &model.ControlPlaneEndpoint{VIP: "10.0.0.200"} },
			[]string{"controlPlaneEndpoint.vip"}, "cannot change after create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := twoCP(t, tt.vip)
			newCfg := cloneConfig(old)
			if old.ControlPlaneEndpoint != nil {
				ep := *old.ControlPlaneEndpoint
				newCfg.ControlPlaneEndpoint = &ep
			}
			tt.edit(&newCfg)
			checkViolations(t, ValidateUpdate(old, newCfg), tt.want, tt.reason)
		})
	}
}
