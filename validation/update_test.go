package validation

import (
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// updateBase returns a valid cluster with a second controlplane node n4,
// so that removing one controlplane node leaves the cluster valid.
func updateBase(t *testing.T) model.ClusterConfig {
	t.Helper()
	c := validCluster(t)
	c.Nodes = append(c.Nodes, model.Node{Name: "n4", Address: "10.0.0.4", Roles: roles(cp)})
	return c
}

// cloneConfig deep-copies the slices of c, so that a test can change the
// copy without touching the original.
func cloneConfig(c model.ClusterConfig) model.ClusterConfig {
	out := c
	out.Nodes = make([]model.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		n.Roles = slices.Clone(n.Roles)
		out.Nodes[i] = n
	}
	out.ClusterUpstreamDNS = slices.Clone(c.ClusterUpstreamDNS)
	out.PrivateRegistries = slices.Clone(c.PrivateRegistries)
	return out
}

// removeNode drops the node named name.
func removeNode(c *model.ClusterConfig, name string) {
	c.Nodes = slices.DeleteFunc(c.Nodes, func(n model.Node) bool { return n.Name == name })
}

func TestValidateUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(t *testing.T, c *model.ClusterConfig)
		want   []string
		reason string
	}{
		{"no change", func(*testing.T, *model.ClusterConfig) {}, nil, ""},

		// Nodes may be added; workers may be removed.
		{"add a worker", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(worker)})
		}, nil, ""},
		{"add a controlplane and etcd node", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(cp, etcd)})
		}, nil, ""},
		{"remove a worker", func(_ *testing.T, c *model.ClusterConfig) { removeNode(c, "n3") }, nil, ""},
		{"reorder nodes and roles", func(_ *testing.T, c *model.ClusterConfig) {
			slices.Reverse(c.Nodes)
			for i := range c.Nodes {
				slices.Reverse(c.Nodes[i].Roles)
			}
		}, nil, ""},
		{"worker gains etcd", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[2].Roles = roles(worker, edge, etcd) }, nil, ""},

		// Controlplane and etcd nodes are never removed or changed.
		{"remove a controlplane node", func(_ *testing.T, c *model.ClusterConfig) { removeNode(c, "n4") },
			[]string{"nodes"}, `controlplane node "n4" (10.0.0.4) cannot be removed`},
		{"remove an etcd worker node", func(_ *testing.T, c *model.ClusterConfig) { removeNode(c, "n2") },
			[]string{"nodes"}, `etcd node "n2" (10.0.0.2) cannot be removed`},
		{"rename a controlplane node", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Name = "n44" },
			[]string{"nodes"}, `controlplane node "n4" (10.0.0.4) cannot be removed`},
		{"move a controlplane node", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Address = "10.0.0.44" },
			[]string{"nodes[3].address"}, `controlplane node "n4" must keep its address 10.0.0.4`},
		{"same address in another spelling ok", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Address = "::ffff:10.0.0.4" }, nil, ""},
		{"etcd node drops etcd", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[1].Roles = roles(worker) },
			[]string{"nodes[1].roles"}, `etcd node "n2" must keep its roles worker and etcd`},
		{"controlplane node gains etcd", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Roles = roles(cp, etcd) },
			[]string{"nodes[3].roles"}, `controlplane node "n4" must keep its roles controlplane`},

		// The create node rules hold for the new node list.
		{"new node breaks role rules", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(cp, worker)})
		}, []string{"nodes[4].roles"}, "controlplane and worker are exclusive"},
		{"new node without address", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n5", Roles: roles(worker)})
		}, []string{"nodes[4].address"}, "is required"},
		{"new node duplicates a name", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n3", Address: "10.0.0.5", Roles: roles(worker)})
		}, []string{"nodes[4].name"}, "already the name of nodes[2]"},
		{"new node duplicates an address", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n5", Address: "10.0.0.3", Roles: roles(worker)})
		}, []string{"nodes[4].address"}, "already the address of nodes[2]"},
		{"last worker removed", func(_ *testing.T, c *model.ClusterConfig) {
			removeNode(c, "n3")
			c.Nodes[1].Roles = roles(cp, etcd)
		}, []string{"nodes", "nodes[1].roles"}, "at least one worker node is required"},
		{"new edge node without worker", func(_ *testing.T, c *model.ClusterConfig) {
			removeNode(c, "n3")
			c.Nodes = append(c.Nodes, model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(edge)})
			c.Nodes[1].Roles = roles(worker, etcd)
		}, []string{"nodes[3].roles"}, "edge cannot stand alone"},
		{"new node is the singlecloud server", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n5", Address: "10.0.0.9", Roles: roles(worker)})
		}, []string{"nodes[4].address"}, "singlecloud server itself"},

		// SSH settings and singleCloudAddress may change, and are checked.
		{"change ssh settings and manager address", func(t *testing.T, c *model.ClusterConfig) {
			c.SSHUser, c.SSHKey, c.SSHPort, c.SingleCloudAddress = "admin", rsaKey(t), 2222, "10.0.0.10:9000"
		}, nil, ""},
		{"sshKey left empty (caller must fill it in)", func(_ *testing.T, c *model.ClusterConfig) { c.SSHKey = "" }, []string{"sshKey"}, "is required"},
		{"sshKey encrypted", func(t *testing.T, c *model.ClusterConfig) { c.SSHKey = ed25519Key(t, "pw") }, []string{"sshKey"}, "passphrase"},
		{"sshUser empty", func(_ *testing.T, c *model.ClusterConfig) { c.SSHUser = "" }, []string{"sshUser"}, "is required"},
		{"sshPort out of range", func(_ *testing.T, c *model.ClusterConfig) { c.SSHPort = 0 }, []string{"sshPort"}, "out of range"},
		{"singleCloudAddress bad", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.9" }, []string{"singleCloudAddress"}, "ip:port"},
		{"singleCloudAddress moved onto a node", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.3:8088" }, []string{"nodes[2].address"}, "singlecloud server itself"},

		// Everything else is fixed at create.
		{"name", func(_ *testing.T, c *model.ClusterConfig) { c.Name = "prod2" }, []string{"name"}, `cannot change after create; keep "prod"`},
		{"clusterDomain", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "corp.local" }, []string{"clusterDomain"}, "cannot change after create"},
		{"clusterCidr", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterCIDR = "10.50.0.0/16" }, []string{"clusterCidr"}, `cannot change after create; keep "10.42.0.0/16"`},
		{"serviceCidr", func(_ *testing.T, c *model.ClusterConfig) { c.ServiceCIDR = "10.43.0.0/17" }, []string{"serviceCidr"}, "cannot change after create"},
		{"clusterDNSServiceIP", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDNSServiceIP = "10.43.0.11" }, []string{"clusterDNSServiceIP"}, "cannot change after create"},
		{"clusterUpstreamDNS", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterUpstreamDNS = []string{"1.1.1.1"} }, []string{"clusterUpstreamDNS"}, "cannot change after create"},
		{"clusterUpstreamDNS emptied", func(_ *testing.T, c *model.ClusterConfig) {
			c.ClusterUpstreamDNS = []string{}
		}, []string{"clusterUpstreamDNS"}, "cannot change after create"},
		{"network.plugin", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Plugin = model.PluginCalico }, []string{"network.plugin"}, "cannot change after create"},
		{"network.iface", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Iface = "eth1" }, []string{"network.iface"}, "cannot change after create"},
		{"privateRegistries", func(_ *testing.T, c *model.ClusterConfig) { c.PrivateRegistries[0].Password = "n3w-s3cret" }, []string{"privateRegistries"}, "cannot change after create"},
		{"kubernetesVersion", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v1.36.4" }, []string{"kubernetesVersion"}, "cannot change after create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := updateBase(t)
			newCfg := cloneConfig(old)
			tt.mutate(t, &newCfg)
			err := ValidateUpdate(old, newCfg)
			checkViolations(t, err, tt.want, tt.reason)
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("error %q reveals a registry password", err)
			}
		})
	}
}

func TestValidateUpdateRemovalMessage(t *testing.T) {
	old := updateBase(t)
	newCfg := cloneConfig(old)
	removeNode(&newCfg, "n1")
	errs := fieldErrors(t, ValidateUpdate(old, newCfg))
	want := `nodes: controlplane node "n1" (10.0.0.1) cannot be removed; controlplane and etcd nodes may be added, never removed, so put it back`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("ValidateUpdate = %v, want exactly %q", errs, want)
	}
}

func TestValidateUpdateReportsEveryViolationAtOnce(t *testing.T) {
	old := updateBase(t)
	newCfg := cloneConfig(old)
	newCfg.ClusterCIDR = "10.50.0.0/16"
	newCfg.SSHPort = 70000
	removeNode(&newCfg, "n4")
	newCfg.Nodes[0].Address = "10.0.0.100"
	newCfg.Nodes = append(newCfg.Nodes, model.Node{Name: "n5", Address: "10.0.0.2", Roles: roles(etcd)})

	errs := fieldErrors(t, ValidateUpdate(old, newCfg))
	want := []string{
		"clusterCidr: cannot change after create; keep \"10.42.0.0/16\" (only nodes, sshUser, sshKey, sshPort and singleCloudAddress may change)",
		"sshPort: 70000 is out of range; use a port between 1 and 65535",
		"nodes[3].address: 10.0.0.2 is already the address of nodes[1]; node addresses must be unique",
		"nodes[3].roles: etcd cannot stand alone; add controlplane or worker to the node",
		`nodes[0].address: controlplane node "n1" must keep its address 10.0.0.1`,
		`nodes: controlplane node "n4" (10.0.0.4) cannot be removed; controlplane and etcd nodes may be added, never removed, so put it back`,
	}
	got := make([]string, len(errs))
	for i, fe := range errs {
		got[i] = fe.Error()
	}
	if !slices.Equal(got, want) {
		t.Fatalf("violations:\n got  %q\n want %q", got, want)
	}
}

func TestValidateUpdateNilAndEmptyListsAreEqual(t *testing.T) {
	old := updateBase(t)
	old.ClusterUpstreamDNS, old.PrivateRegistries = nil, nil
	newCfg := cloneConfig(old)
	newCfg.ClusterUpstreamDNS, newCfg.PrivateRegistries = []string{}, []model.PrivateRegistry{}
	if err := ValidateUpdate(old, newCfg); err != nil {
		t.Fatalf("ValidateUpdate(nil lists, empty lists) = %v, want nil", err)
	}
}
