package zke

import (
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// sharedConfig is testConfig with n2 a second controlplane node and a
// shared endpoint.
func sharedConfig() model.ClusterConfig {
	c := testConfig()
	c.Nodes[1].Roles = []model.Role{model.RoleControlPlane, model.RoleEtcd}
	c.ControlPlaneEndpoint = &model.ControlPlaneEndpoint{VIP: "10.0.0.200"}
	return c
}

func TestSharedEndpointConfigs(t *testing.T) {
	r := testRun(t, sharedConfig(), nil)
	cps := withRole(r.nodes, model.RoleControlPlane)
	haproxy := haproxyConfig(cps)
	for _, want := range []string{"bind :8443", "mode tcp", "server n1 10.0.0.1:6443 check", "server n2 10.0.0.2:6443 check", "fall 2", "option httpchk GET /readyz", "check-ssl verify none"} {
		if !strings.Contains(haproxy, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, haproxy)
		}
	}
	k1 := keepalivedConfig("c1", "10.0.0.200", "eth0", cps[0], cps)
	k2 := keepalivedConfig("c1", "10.0.0.200", "eth0", cps[1], cps)
	for _, want := range []string{"state BACKUP", "nopreempt", "interface eth0", "unicast_src_ip 10.0.0.1", "        10.0.0.2\n", "10.0.0.200/32 dev eth0", "priority 150"} {
		if !strings.Contains(k1, want) {
			t.Errorf("n1's keepalived.conf lacks %q:\n%s", want, k1)
		}
	}
	if !strings.Contains(k2, "priority 149") || !strings.Contains(k2, "unicast_src_ip 10.0.0.2") || strings.Contains(k2, "        10.0.0.2\n") {
		t.Errorf("n2's keepalived.conf:\n%s", k2)
	}
	if id := virtualRouterID("c1"); id < 1 || id > 255 || id != virtualRouterID("c1") {
		t.Errorf("virtual router id %d", id)
	}
}

func TestSharedEndpointIsEveryComponentsServer(t *testing.T) {
	r := testRun(t, sharedConfig(), nil)
	if got, err := r.apiServerURL(); err != nil || got != "https://10.0.0.200:8443" {
		t.Errorf("apiServerURL = %q, %v", got, err)
	}
	if in := r.pkiInput(); !slices.Contains(in.ExtraSANs, "10.0.0.200") {
		t.Errorf("the API server certificate's extra SANs %v lack the VIP", in.ExtraSANs)
	}
	for _, n := range r.nodes {
		r.facts[n.Name] = nodeFacts{canPrivileged: true, iface: "eth0"}
	}
	specs := r.endpointSpecs(r.nodes[0])
	if len(specs) != 2 || specs[0].Name != containerHAProxy || specs[1].Name != containerKeepalived {
		t.Fatalf("endpoint specs of n1: %+v", specs)
	}
	if !slices.Contains(specs[1].CapAdd, "NET_ADMIN") || specs[1].NetworkMode != "host" ||
		specs[0].Image != r.images[model.ImageHAProxy] || specs[1].Image != r.images[model.ImageKeepalived] {
		t.Errorf("keepalived spec %+v", specs[1])
	}
	if len(r.endpointSpecs(r.nodes[2])) != 0 {
		t.Error("a worker got endpoint containers")
	}
	for _, k := range model.LoadBalancerImageComponents() {
		if !slices.Contains(r.imagesFor(r.nodes[0]), r.images[k]) || slices.Contains(r.imagesFor(r.nodes[2]), r.images[k]) {
			t.Errorf("the %s image is not exactly on the controlplane nodes", k)
		}
	}
	// A changed backend list changes the specs: the containers are
	// recreated on the new configuration.
	before := fingerprints(r)[stepControlPlane]
	cfg := sharedConfig()
	cfg.Nodes[2].Roles = []model.Role{model.RoleControlPlane, model.RoleWorker}
	r2 := testRun(t, cfg, r.state.PKI)
	for _, n := range r2.nodes {
		r2.facts[n.Name] = nodeFacts{canPrivileged: true, iface: "eth0"}
	}
	if fingerprints(r2)[stepControlPlane] == before {
		t.Error("a third controlplane node left the controlplane fingerprint unchanged")
	}

	plain := testRun(t, testConfig(), nil)
	if got, _ := plain.apiServerURL(); got != "https://10.0.0.1:6443" {
		t.Errorf("without a shared endpoint apiServerURL = %q", got)
	}
	if len(plain.endpointSpecs(plain.nodes[0])) != 0 || len(plain.pkiInput().ExtraSANs) != 0 {
		t.Error("a cluster without a shared endpoint got one")
	}
}

func TestParseInterface(t *testing.T) {
	tests := []struct {
		out, want, network string
		wantErr            bool
	}{
		{"2: eth0    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth0\\       valid_lft forever preferred_lft forever\n", "eth0", "10.0.0.0/24", false},
		{"5: veth1@if4    inet 10.250.1.11/24 scope global veth1\n", "veth1", "10.250.1.0/24", false},
		{"3: ppp0    inet 10.0.0.1 peer 10.0.0.2/32 scope global ppp0\n", "ppp0", "invalid Prefix", false},
		{"", "", "invalid Prefix", true},
	}
	for _, tt := range tests {
		got, network, err := parseInterface(tt.out)
		if got != tt.want || network.String() != tt.network || (err != nil) != tt.wantErr {
			t.Errorf("parseInterface(%q) = %q, %s, %v", tt.out, got, network, err)
		}
	}
	if s := interfaceScript("10.0.0.1"); s != "ip -o -4 addr show to '10.0.0.1/32'" {
		t.Errorf("script %q", s)
	}
}

func TestVRRPPeersKeepARemovedNodeUntilItIsGone(t *testing.T) {
	old := sharedConfig()
	r := testRun(t, old, nil)
	applied := old
	r.state.Applied = &applied
	cfg := sharedConfig()
	cfg.Nodes = cfg.Nodes[1:] // n1, a controlplane node, removed
	r2 := testRun(t, cfg, r.state.PKI)
	r2.state.Applied = &applied
	var names []string
	for _, n := range r2.vrrpPeers() {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"n2", "n1"}) {
		t.Errorf("peers %v; want n2, then n1 until its clean step removed it", names)
	}
	r2.state.Applied = &cfg
	if got := r2.vrrpPeers(); len(got) != 1 || got[0].Name != "n2" {
		t.Errorf("peers after the update applied: %v", got)
	}
}
