package validation

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// updateBase returns a valid cluster with a second controlplane node n4,
// so that removing one controlplane node leaves the cluster valid, and
// with installer settings that an update may carry over or change.
func updateBase(t *testing.T) model.ClusterConfig {
	t.Helper()
	c := validCluster(t)
	c.Images = map[string]string{model.ImageEtcd: "registry.local/etcd:v3.6.0", model.ImagePause: "registry.local/pause:3.10"}
	c.ImageArchive = "images.tar"
	c.Nodes[0].Labels = map[string]string{"zone": "a"}
	c.Nodes[0].Taints = []model.Taint{{Key: "dedicated", Value: "cp", Effect: model.TaintNoSchedule}}
	c.Nodes[0].Kubelet.ExtraArgs = map[string]string{"v": "2"}
	c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n4", Address: "10.0.0.4", Roles: roles(cp)}))
	return c
}

// cloneConfig deep-copies the slices and maps of c, so that a test can change the
// copy without touching the original.
func cloneConfig(c model.ClusterConfig) model.ClusterConfig {
	out := c
	out.Nodes = make([]model.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		n.Roles = slices.Clone(n.Roles)
		n.Labels = maps.Clone(n.Labels)
		n.Taints = slices.Clone(n.Taints)
		n.Kubelet.ExtraArgs = maps.Clone(n.Kubelet.ExtraArgs)
		out.Nodes[i] = n
	}
	out.ClusterUpstreamDNS = slices.Clone(c.ClusterUpstreamDNS)
	out.PrivateRegistries = slices.Clone(c.PrivateRegistries)
	out.Images = maps.Clone(c.Images)
	out.StepDeadlines = maps.Clone(c.StepDeadlines)
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
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(worker)}))
		}, nil, ""},
		{"add a controlplane and etcd node", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(cp, etcd)}))
		}, nil, ""},
		{"remove a worker", func(_ *testing.T, c *model.ClusterConfig) { removeNode(c, "n3") }, nil, ""},
		{"reorder nodes and roles", func(_ *testing.T, c *model.ClusterConfig) {
			slices.Reverse(c.Nodes[1:])
			for i := range c.Nodes {
				slices.Reverse(c.Nodes[i].Roles)
			}
		}, nil, ""},
		{"another first controlplane node", func(_ *testing.T, c *model.ClusterConfig) { slices.Reverse(c.Nodes) },
			[]string{"nodes"}, `controlplane node "n1" must stay the first controlplane node`},
		{"worker gains etcd", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[2].Roles = roles(worker, edge, etcd) }, nil, ""},

		// Controlplane and etcd nodes are removed only when the cluster
		// survives it, and never changed.
		{"remove a controlplane node", func(_ *testing.T, c *model.ClusterConfig) { removeNode(c, "n4") }, nil, ""},
		{"remove the endpoint controlplane node", func(_ *testing.T, c *model.ClusterConfig) { removeNode(c, "n1") },
			[]string{"nodes"}, `controlplane node "n1" (10.0.0.1) cannot be removed: it is the API endpoint`},
		{"shrink a 2-member etcd", func(_ *testing.T, c *model.ClusterConfig) { removeNode(c, "n2") },
			[]string{"nodes"}, `would leave 1 of the 2 etcd members, not a majority`},
		{"remove one of 3 etcd members", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes[2].Roles = roles(worker, edge, etcd)
		}, nil, ""},
		{"rename a controlplane node", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Name = "n44" },
			[]string{"nodes"}, `controlplane node "n4" (10.0.0.4) cannot be renamed`},
		{"move a controlplane node", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Address = "10.0.0.44" },
			[]string{"nodes[3].address"}, `controlplane node "n4" must keep its address 10.0.0.4`},
		{"same address in another spelling ok", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Address = "::ffff:10.0.0.4" }, nil, ""},
		{"etcd node drops etcd", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[1].Roles = roles(worker) },
			[]string{"nodes[1].roles"}, `etcd node "n2" must keep its roles worker and etcd`},
		{"controlplane node gains etcd", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[3].Roles = roles(cp, etcd) },
			[]string{"nodes[3].roles"}, `controlplane node "n4" must keep its roles controlplane`},

		// The create node rules hold for the new node list.
		{"new node breaks role rules", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(cp, worker)}))
		}, []string{"nodes[4].roles"}, "controlplane and worker are exclusive"},
		{"new node without address", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Roles: roles(worker)}))
		}, []string{"nodes[4].address"}, "is required"},
		{"new node duplicates a name", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n3", Address: "10.0.0.5", Roles: roles(worker)}))
		}, []string{"nodes[4].name"}, "already the name of nodes[2]"},
		{"new node duplicates an address", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.3", Roles: roles(worker)}))
		}, []string{"nodes[4].address"}, "already the address of nodes[2]"},
		{"last worker removed", func(_ *testing.T, c *model.ClusterConfig) {
			removeNode(c, "n3")
			c.Nodes[1].Roles = roles(cp, etcd)
		}, []string{"nodes", "nodes[1].roles"}, "at least one worker node is required"},
		{"new edge node without worker", func(_ *testing.T, c *model.ClusterConfig) {
			removeNode(c, "n3")
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(edge)}))
			c.Nodes[1].Roles = roles(worker, etcd)
		}, []string{"nodes[3].roles"}, "edge cannot stand alone"},
		{"new node is the singlecloud server", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.9", Roles: roles(worker)}))
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
		{"kubernetesVersion down", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v1.36.2" }, []string{"kubernetesVersion"}, "goes down"},

		// Images may change (the upgrade path), and are checked.
		{"images set", func(_ *testing.T, c *model.ClusterConfig) {
			c.Images = map[string]string{model.ImageKubernetes: "registry.local/zdnscloud/kubernetes:v1.36.3"}
		}, nil, ""},
		{"images changed and removed", func(_ *testing.T, c *model.ClusterConfig) {
			c.Images[model.ImageEtcd] = "registry.local/etcd:v3.6.1"
			delete(c.Images, model.ImagePause)
		}, nil, ""},
		{"imageArchive set", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "v2/images.tar" }, nil, ""},
		{"imageArchive cleared", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "" }, nil, ""},
		{"images bad", func(_ *testing.T, c *model.ClusterConfig) { c.Images = map[string]string{"etcd": "", "weave": "w"} },
			[]string{"images.etcd", "images.weave"}, "is empty"},
		{"imageArchive bad", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "/srv/images.tar" }, []string{"imageArchive"}, "is an absolute path"},

		// Per-node settings may change, except where a controlplane or
		// etcd node's certificates and data are.
		{"worker settings change", onNode(2, func(n *model.Node) {
			n.InternalAddress, n.PrefixPath, n.SSHPort, n.SSHUser = "192.168.0.3", "/opt/zke", 2222, "core"
			n.DockerSocket, n.ContainerdSocket = "/run/docker.sock", "/run/k3s/containerd.sock"
			n.Labels = map[string]string{"zone": "b"}
			n.Taints = []model.Taint{{Key: "spot", Effect: model.TaintPreferNoSchedule}}
			n.Kubelet = model.KubeletOverrides{CgroupRoot: "/zke-n3", ExtraArgs: map[string]string{"max-pods": "20"}}
		}), nil, ""},
		{"controlplane node's other settings change", onNode(0, func(n *model.Node) {
			n.SSHPort, n.SSHUser = 2222, "core"
			n.DockerSocket, n.ContainerdSocket = "/run/docker.sock", "/run/k3s/containerd.sock"
			n.Labels = nil
			n.Taints = nil
			n.Kubelet = model.KubeletOverrides{CgroupRoot: "/zke-n1"}
		}), nil, ""},
		{"controlplane internalAddress", onNode(3, func(n *model.Node) { n.InternalAddress = "192.168.0.4" }),
			[]string{"nodes[3].internalAddress"}, `cannot change after create; controlplane node "n4" must keep its internal address 10.0.0.4`},
		{"etcd internalAddress", onNode(1, func(n *model.Node) { n.InternalAddress = "192.168.0.2" }),
			[]string{"nodes[1].internalAddress"}, `cannot change after create; etcd node "n2" must keep its internal address 10.0.0.2`},
		{"internalAddress in another spelling ok", onNode(0, func(n *model.Node) { n.InternalAddress = "::ffff:10.0.0.1" }), nil, ""},
		{"controlplane prefixPath", onNode(0, func(n *model.Node) { n.PrefixPath = "/opt/zke" }),
			[]string{"nodes[0].prefixPath"}, `cannot change after create; controlplane node "n1" must keep prefixPath "/"`},
		{"etcd prefixPath", onNode(1, func(n *model.Node) { n.PrefixPath = "/opt/zke" }),
			[]string{"nodes[1].prefixPath"}, `etcd node "n2" must keep prefixPath "/"`},
		{"moved controlplane node reported once", onNode(3, func(n *model.Node) { n.Address, n.InternalAddress = "10.0.0.44", "10.0.0.44" }),
			[]string{"nodes[3].address"}, "must keep its address 10.0.0.4"},
		{"internal address pinned while the address moves", onNode(3, func(n *model.Node) { n.Address = "10.0.0.44" }),
			[]string{"nodes[3].address"}, "must keep its address 10.0.0.4"},
		{"internal address moves away from a kept address", onNode(3, func(n *model.Node) { n.Address, n.InternalAddress = "10.0.0.44", "192.168.0.4" }),
			[]string{"nodes[3].address", "nodes[3].internalAddress"}, "must keep its address 10.0.0.4"},
		{"new node settings are checked", func(_ *testing.T, c *model.ClusterConfig) {
			n := withDefaults(model.Node{Name: "n5", Address: "10.0.0.5", Roles: roles(worker), DockerSocket: "docker.sock"})
			n.Taints = []model.Taint{{Key: "k", Effect: "Never"}}
			c.Nodes = append(c.Nodes, n)
		}, []string{"nodes[4].dockerSocket", "nodes[4].taints[0].effect"}, "not an absolute path"},
		{"new node takes a kept node's internal address", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.5", InternalAddress: "10.0.0.1", Roles: roles(worker)}))
		}, []string{"nodes[4].internalAddress"}, "already the internal address of nodes[0]"},
		{"changed node settings are checked", onNode(2, func(n *model.Node) {
			n.Labels = map[string]string{"bad key": "v"}
			n.Kubelet.ExtraArgs = map[string]string{"--v": "2"}
			n.SSHPort = 0
		}), []string{"nodes[2].sshPort", `nodes[2].labels["bad key"]`, `nodes[2].kubelet.extraArgs["--v"]`}, "out of range"},
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
	want := `nodes: controlplane node "n1" (10.0.0.1) cannot be removed: it is the API endpoint every kubelet, kube-proxy and the admin kubeconfig use, and the cluster has no shared endpoint (controlPlaneEndpoint) to move them to; remove another controlplane node`
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
	newCfg.Nodes = append(newCfg.Nodes, withDefaults(model.Node{Name: "n5", Address: "10.0.0.2", Roles: roles(etcd)}))

	errs := fieldErrors(t, ValidateUpdate(old, newCfg))
	want := []string{
		"clusterCidr: cannot change after create; keep \"10.42.0.0/16\" (only nodes, sshUser, sshKey, sshPort, singleCloudAddress, images, imageArchive, stepDeadlines, certificates, snapshots, upgrade and kubernetesVersion (an upgrade) may change)",
		"sshPort: 70000 is out of range; use a port between 1 and 65535",
		"nodes[3].address: 10.0.0.2 is already the address of nodes[1]; node addresses must be unique",
		"nodes[3].roles: etcd cannot stand alone; add controlplane or worker to the node",
		`nodes[0].address: controlplane node "n1" must keep its address 10.0.0.1`,
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

func TestValidateUpdateConfigStoredBeforeNodeDefaults(t *testing.T) {
	// A config stored before per-node defaults existed has no internal
	// address or prefix path; the defaulted update of it is no change.
	old := updateBase(t)
	for i := range old.Nodes {
		n := &old.Nodes[i]
		n.InternalAddress, n.PrefixPath, n.SSHPort, n.SSHUser, n.DockerSocket, n.ContainerdSocket = "", "", 0, "", "", ""
	}
	newCfg := cloneConfig(old)
	newCfg.ApplyDefaults()
	if err := ValidateUpdate(old, newCfg); err != nil {
		t.Fatalf("ValidateUpdate(stored without node defaults, defaulted) = %v, want nil", err)
	}

	newCfg.Nodes[0].InternalAddress, newCfg.Nodes[1].PrefixPath = "192.168.0.1", "/opt/zke"
	checkViolations(t, ValidateUpdate(old, newCfg), []string{"nodes[0].internalAddress", "nodes[1].prefixPath"}, "must keep its internal address 10.0.0.1")
}

func TestValidateUpdateDoesNotTouchItsInputs(t *testing.T) {
	old := updateBase(t)
	newCfg := cloneConfig(old)
	newCfg.Nodes[0].Labels["bad key"] = "v"
	want := cloneConfig(newCfg)
	if err := ValidateUpdate(old, newCfg); err == nil {
		t.Fatal("ValidateUpdate with a bad label = nil, want an error")
	}
	if !reflect.DeepEqual(newCfg, want) {
		t.Fatalf("ValidateUpdate changed its input:\n got  %+v\n want %+v", newCfg, want)
	}
}
