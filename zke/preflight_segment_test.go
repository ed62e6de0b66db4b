package zke

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// A bridge cluster's workers must each be inside every other worker's
// network; the control-plane node and a flannel cluster are not judged.
func TestSegmentProblem(t *testing.T) {
	for _, tc := range []struct {
		name     string
		plugin   string
		networks map[string]string // worker → its interface's network ("" unknown)
		want     []string          // "" alone: no problem
	}{
		{"one network", model.PluginBridge, map[string]string{"n2": "10.0.0.0/16", "n3": "10.0.0.0/16"}, []string{""}},
		{"a point-to-point address is not judged", model.PluginBridge, map[string]string{"n2": "", "n3": "10.0.0.0/16"}, []string{""}},
		{"another subnet", model.PluginBridge, map[string]string{"n2": "10.0.0.0/24", "n3": "10.0.1.0/24"},
			[]string{"n3 (10.0.1.3) is outside n2's network 10.0.0.0/24", "n2 (10.0.0.2) is outside n3's network 10.0.1.0/24",
				`network.plugin "bridge"`, `use network.plugin "flannel"`}},
		{"flannel crosses subnets", model.PluginFlannel, map[string]string{"n2": "10.0.0.0/24", "n3": "10.0.1.0/24"}, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Network.Plugin = tc.plugin
			cfg.Nodes[2].Address, cfg.Nodes[2].InternalAddress = "10.0.1.3", "10.0.1.3"
			r := testRun(t, cfg, nil)
			for name, network := range tc.networks {
				f := r.facts[name]
				if network != "" {
					f.network = netip.MustParsePrefix(network)
				}
				r.facts[name] = f
			}
			if r.needsSegment(r.nodes[0]) {
				t.Error("the control-plane node's network is read")
			}
			if got := r.needsSegment(r.nodes[1]); got != (tc.plugin == model.PluginBridge) {
				t.Errorf("a worker's network read: %v", got)
			}
			err := r.segmentProblem()
			if tc.want[0] == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, workflow.ErrUserFixable) {
				t.Fatalf("err = %v, want a user-fixable refusal", err)
			}
			var ne *workflow.NodeError
			if !errors.As(err, &ne) || ne.Node != "n2" {
				t.Fatalf("err = %v, want one of node n2", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error()+" "+ne.Hint, w) {
					t.Errorf("%v (hint %q) lacks %q", err, ne.Hint, w)
				}
			}
		})
	}
}
