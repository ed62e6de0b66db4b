package zke

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// needsSegment says whether preflight reads the network of n's internal
// address: flanneld's host-gw backend (the bridge plugin) routes each
// worker's pod CIDR through that worker's address, which every other
// worker must reach on its own link.
// An IPv6 internal address is not judged: the interface is read for IPv4.
func (r *run) needsSegment(n node) bool {
	ip, err := netip.ParseAddr(n.InternalAddress)
	return flannelBackend(r.cfg.Network.Plugin) == flannelBackendHostGW && n.HasRole(model.RoleWorker) && err == nil && ip.Is4()
}

// segmentProblem refuses a bridge cluster whose workers are not on one
// layer-2 segment: a worker whose address is outside another worker's
// network (read from its interface at preflight) could be reached only
// through a router, which host-gw routes skip, and flanneld would fail
// to add the route (or add one nothing answers on). A worker whose
// network is unknown (a point-to-point address) is not judged. It names
// at most three pairs.
func (r *run) segmentProblem() error {
	if flannelBackend(r.cfg.Network.Plugin) != flannelBackendHostGW {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var pairs []string
	var first node
	ws := withRole(r.nodes, model.RoleWorker)
	for _, a := range ws {
		network := r.facts[a.Name].network
		if !network.IsValid() {
			continue
		}
		for _, b := range ws {
			ip, err := netip.ParseAddr(b.InternalAddress)
			if b.Name == a.Name || err != nil || ip.Is4() != network.Addr().Is4() || network.Contains(ip) {
				continue
			}
			if len(pairs) == 0 {
				first = a
			}
			if len(pairs) < 3 {
				pairs = append(pairs, fmt.Sprintf("%s (%s) is outside %s's network %s", b.Name, ip, a.Name, network))
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return workflow.UserFixable(nodeErr(first,
		fmt.Errorf("network.plugin %q routes pods through the workers' addresses and needs every worker on one layer-2 network: %s", model.PluginBridge, strings.Join(pairs, "; ")),
		fmt.Sprintf("use network.plugin %q, whose VXLAN tunnel crosses routers, or give the workers internal addresses on one network", model.PluginFlannel)))
}
