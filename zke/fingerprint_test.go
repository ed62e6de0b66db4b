package zke

import (
	"maps"
	"slices"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
)

// testConfig is a defaulted three-node cluster: n1 controlplane and etcd,
// n2 worker and etcd, n3 worker.
func testConfig() model.ClusterConfig {
	c := model.ClusterConfig{
		Name: "c1", SSHUser: "root", SingleCloudAddress: "10.0.0.9:8088",
		Network: model.Network{Plugin: model.PluginBridge},
		Nodes: []model.Node{
			{Name: "n1", Address: "10.0.0.1", Roles: []model.Role{model.RoleControlPlane, model.RoleEtcd}},
			{Name: "n2", Address: "10.0.0.2", Roles: []model.Role{model.RoleWorker, model.RoleEtcd},
				Labels: map[string]string{"zone": "a"}, Taints: []model.Taint{{Key: "gpu", Value: "yes", Effect: model.TaintNoSchedule}}},
			{Name: "n3", Address: "10.0.0.3", Roles: []model.Role{model.RoleWorker}},
		},
	}
	c.ApplyDefaults()
	return c
}

// testRun is a run of cfg as it is after the steps it would fingerprint
// ran: a PKI, both etcd members joined, every node privileged-capable.
func testRun(t *testing.T, cfg model.ClusterConfig, b *pki.Bundle) *run {
	t.Helper()
	in, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := in.newRun(cfg, State{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		if b, _, err = pki.Ensure(nil, r.pkiInput()); err != nil {
			t.Fatal(err)
		}
	}
	r.state.PKI = b
	r.state.EtcdMembers = []string{"n1", "n2"}
	r.state.EtcdInitialCluster = map[string]string{
		"n1": etcdAlone(r.nodes[0]),
		"n2": etcdAlone(r.nodes[0]) + "," + etcdAlone(r.nodes[1]),
	}
	for _, n := range r.nodes {
		r.facts[n.Name] = nodeFacts{canPrivileged: true}
	}
	return r
}

// fingerprints returns every fingerprint of r by step ("error: ..." for
// one that fails).
func fingerprints(r *run) map[string]string {
	out := map[string]string{}
	for _, st := range r.updateSteps() {
		if st.Fingerprint == nil {
			continue
		}
		fp, err := st.Fingerprint()
		if err != nil {
			fp = "error: " + err.Error()
		}
		out[st.Name] = fp
	}
	return out
}

func TestFingerprintsFollowTheirInputs(t *testing.T) {
	base := testConfig()
	baseRun := testRun(t, base, nil)
	bundle := baseRun.state.PKI
	want := fingerprints(baseRun)
	if len(want) != 9 {
		t.Fatalf("fingerprinted steps %v, want the 9 skippable ones", slices.Sorted(maps.Keys(want)))
	}
	for step, fp := range want {
		if len(fp) != 64 {
			t.Fatalf("%s fingerprint %q is not a hex SHA-256", step, fp)
		}
	}
	tests := []struct {
		name    string
		cfg     func(c *model.ClusterConfig)
		run     func(r *run)
		changed []string
	}{
		{"nothing changed", nil, nil, nil},
		{"the run's clock and SSH settings are no input", func(c *model.ClusterConfig) { c.SSHUser = "admin"; c.SSHKey = "other" }, nil, nil},
		{"kubernetes image", func(c *model.ClusterConfig) { c.Images = map[string]string{model.ImageKubernetes: "reg/k8s:1"} }, nil,
			[]string{stepImages, stepControlPlane, stepWorkers}},
		{"etcd image", func(c *model.ClusterConfig) { c.Images = map[string]string{model.ImageEtcd: "reg/etcd:1"} }, nil,
			[]string{stepImages, stepEtcd}},
		{"coredns image", func(c *model.ClusterConfig) { c.Images = map[string]string{model.ImageCoreDNS: "reg/coredns:1"} }, nil,
			[]string{stepImages, stepAddons}},
		{"image archive is no input", func(c *model.ClusterConfig) { c.ImageArchive = "images.tar" }, nil, nil},
		{"step deadlines are no input", func(c *model.ClusterConfig) { c.StepDeadlines = map[string]string{stepImages: "1h"} }, nil, nil},
		{"a worker added", func(c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, model.Node{Name: "n4", Address: "10.0.0.4", Roles: []model.Role{model.RoleWorker}})
			c.ApplyDefaults()
		}, nil, []string{stepCertificates, stepArtifacts, stepImages, stepWorkers, stepNetwork, stepAddons}},
		{"a worker's CNI plugin directories", nil, func(r *run) {
			r.facts["n3"] = nodeFacts{canPrivileged: true, cri: criFacts{cniBinDirs: []string{"/usr/lib/cni"}}}
		}, []string{stepArtifacts}},
		{"a worker label", func(c *model.ClusterConfig) { c.Nodes[1].Labels = map[string]string{"zone": "b"} }, nil, []string{stepAddons}},
		{"a worker taint", func(c *model.ClusterConfig) {
			c.Nodes[2].Taints = []model.Taint{{Key: "k", Effect: model.TaintNoExecute}}
		}, nil,
			[]string{stepAddons}},
		{"upstream DNS", func(c *model.ClusterConfig) { c.ClusterUpstreamDNS = []string{"1.1.1.1"} }, nil, []string{stepAddons}},
		{"a kubelet flag", func(c *model.ClusterConfig) { c.Nodes[2].Kubelet.ExtraArgs = map[string]string{"max-pods": "50"} }, nil,
			[]string{stepWorkers}},
		{"a containerd socket", func(c *model.ClusterConfig) { c.Nodes[2].ContainerdSocket = "/run/k3s/containerd.sock" }, nil,
			[]string{stepImages, stepWorkers}},
		// flannel's image becomes a pod image the images step brings.
		{"network plugin", func(c *model.ClusterConfig) { c.Network.Plugin = model.PluginFlannel }, nil, []string{stepNetwork}},
		{"a node's capabilities", nil, func(r *run) { r.facts["n3"] = nodeFacts{missingCaps: []string{"SYS_MODULE"}} }, []string{stepWorkers}},
		{"a worker's resolver file", nil, func(r *run) {
			r.facts["n3"] = nodeFacts{canPrivileged: true, dns: nodeDNS{resolvConf: systemdResolvConf}}
		}, []string{stepWorkers}},
		{"a worker's upstream DNS", nil, func(r *run) {
			r.facts["n3"] = nodeFacts{canPrivileged: true, dns: nodeDNS{resolvConf: etcResolvConf, upstreams: []string{"192.0.2.53"}}}
		}, []string{stepAddons}},
		{"an etcd member's initial cluster", nil, func(r *run) { r.state.EtcdInitialCluster["n2"] = "other" }, []string{stepEtcd}},
		{"an etcd member not joined", nil, func(r *run) { r.state.EtcdMembers = []string{"n1"} }, []string{stepEtcd}},
		{"etcd members in another order", nil, func(r *run) { r.state.EtcdMembers = []string{"n2", "n1"} }, nil},
		{"certificates reissued", nil, func(r *run) {
			b, _, err := pki.Ensure(nil, r.pkiInput())
			if err != nil {
				t.Fatal(err)
			}
			r.state.PKI = b
		}, []string{stepCertificates}},
		{"a worker removed since the last success", nil, func(r *run) {
			applied := testConfig()
			applied.Nodes = append(applied.Nodes, model.Node{Name: "n9", Address: "10.0.0.99", Roles: []model.Role{model.RoleWorker}})
			r.state.Applied = &applied
		}, []string{stepDrain}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			r := testRun(t, cfg, bundle)
			if tt.run != nil {
				tt.run(r)
			}
			got := fingerprints(r)
			var changed []string
			for _, step := range slices.Sorted(maps.Keys(want)) {
				if got[step] != want[step] {
					changed = append(changed, step)
				}
			}
			wantChanged := slices.Sorted(slices.Values(tt.changed))
			if !slices.Equal(changed, wantChanged) {
				t.Fatalf("changed fingerprints %v, want %v", changed, wantChanged)
			}
		})
	}
}

func TestCertificatesFingerprintWithoutPKI(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	r.state.PKI = nil
	if _, err := r.certificatesFingerprint(); err == nil {
		t.Fatal("a fingerprint of certificates that do not exist yet")
	}
}
