package zke

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// TestVIPProblem: the virtual IP must be a host address of every
// control-plane node's network; a point-to-point address is not judged.
func TestVIPProblem(t *testing.T) {
	n := node{Node: model.Node{Name: "n1"}}
	lan := netip.MustParsePrefix("10.0.0.0/24")
	for _, tt := range []struct {
		vip     string
		network netip.Prefix
		want    string
	}{
		{"10.0.0.200", lan, ""},
		{"10.0.1.200", lan, "controlPlaneEndpoint.vip 10.0.1.200 is not in n1's network 10.0.0.0/24 (on eth0)"},
		{"10.0.0.0", lan, "the network or broadcast address of 10.0.0.0/24"},
		{"10.0.0.255", lan, "the network or broadcast address of 10.0.0.0/24"},
		{"10.0.0.3", netip.MustParsePrefix("10.0.0.2/31"), ""},
		{"10.9.9.9", netip.Prefix{}, ""},
	} {
		got := vipProblem(n, tt.vip, "eth0", tt.network)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("vipProblem(%s, %s) = %q, want %q", tt.vip, tt.network, got, tt.want)
		}
	}
	if got := lastAddr(netip.MustParsePrefix("10.250.1.0/24")); got.String() != "10.250.1.255" {
		t.Errorf("lastAddr = %s", got)
	}
}

func TestParseVIPSight(t *testing.T) {
	for _, tt := range []struct {
		out  string
		want vipSight
	}{
		{"held\n", vipSight{held: true}},
		{"10.0.0.200 lladdr 52:54:00:12:34:56 REACHABLE\n", vipSight{mac: "52:54:00:12:34:56"}},
		{"10.0.0.200 lladdr 52:54:00:12:34:56 STALE\n", vipSight{mac: "52:54:00:12:34:56"}},
		{"10.0.0.200 INCOMPLETE\n", vipSight{}},
		{"10.0.0.200 FAILED\n", vipSight{}},
		{"", vipSight{}},
	} {
		if got := parseVIPSight(tt.out); got != tt.want {
			t.Errorf("parseVIPSight(%q) = %+v, want %+v", tt.out, got, tt.want)
		}
	}
	s := vipProbeScript("10.0.0.200", "eth0")
	for _, want := range []string{"ip -o -4 addr show to '10.0.0.200/32'", "ip neigh flush to '10.0.0.200' dev 'eth0'", "ping -c 1 -W 2 '10.0.0.200'", "ip neigh show to '10.0.0.200' dev 'eth0'"} {
		if !strings.Contains(s, want) {
			t.Errorf("probe script lacks %q:\n%s", want, s)
		}
	}
}

// TestVIPTaken: an answer refuses the VIP only while no control-plane
// node holds it (with one holding it, the answers are this cluster's).
func TestVIPTaken(t *testing.T) {
	for _, tt := range []struct {
		name   string
		sights map[string]vipSight
		taken  bool
	}{
		{"nobody answers", map[string]vipSight{}, false},
		{"another machine answers", map[string]vipSight{"n2": {mac: "52:54:00:aa:bb:cc"}}, true},
		{"a node holds it", map[string]vipSight{"n1": {held: true}, "n2": {mac: "52:54:00:aa:bb:cc"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := testRun(t, sharedConfig(), nil)
			for name, s := range tt.sights {
				f := r.facts[name]
				f.vip = s
				r.facts[name] = f
			}
			err := r.vipTaken()
			if (err != nil) != tt.taken {
				t.Fatalf("vipTaken = %v", err)
			}
			if err != nil && (!errors.Is(err, workflow.ErrUserFixable) || !strings.Contains(err.Error(), "52:54:00:aa:bb:cc") || !strings.Contains(err.Error(), "n2")) {
				t.Errorf("vipTaken = %v", err)
			}
		})
	}
	if err := testRun(t, testConfig(), nil).vipTaken(); err != nil {
		t.Errorf("a cluster without a shared endpoint: %v", err)
	}
	// Once created, the VIP is this cluster's: an update that removes
	// the node holding it sees it answered by that node.
	created := testRun(t, sharedConfig(), nil)
	applied := sharedConfig()
	created.state.Applied = &applied
	created.facts["n2"] = nodeFacts{vip: vipSight{mac: "52:54:00:aa:bb:cc"}}
	if err := created.vipTaken(); err != nil {
		t.Errorf("a created cluster's VIP judged: %v", err)
	}
}
