package zke

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// The shared endpoint's virtual IP as preflight sees it from each
// control-plane node: on the node's network, and not another machine's.
// keepalived would take an address another machine answers for, and
// both would then answer ARP for it: that machine's service and the
// cluster's API would come and go as the switches learn one or the other.

// vipProblem says why keepalived cannot serve vip from control-plane node
// n, whose internal address is on network (on iface), or "": the virtual
// IP is announced by ARP on that network alone, so it must be one of its
// host addresses. A node whose address has no network of its own (a
// point-to-point one) is not judged.
func vipProblem(n node, vip, iface string, network netip.Prefix) string {
	ip, err := netip.ParseAddr(vip)
	if err != nil || !network.IsValid() {
		return ""
	}
	switch {
	case !network.Contains(ip):
		return fmt.Sprintf("controlPlaneEndpoint.vip %s is not in %s's network %s (on %s): keepalived announces the virtual IP by ARP on that network only, so no other host would reach it; give an unused address of %s (every control-plane node must be on it)",
			vip, n.Name, network, iface, network)
	case network.Bits() < 31 && (ip == network.Addr() || ip == lastAddr(network)):
		return fmt.Sprintf("controlPlaneEndpoint.vip %s is the network or broadcast address of %s (%s's network on %s); give an unused host address of it", vip, network, n.Name, iface)
	}
	return ""
}

// lastAddr is the last address of IPv4 network p, its broadcast address.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) | (uint32(1)<<(32-p.Bits()) - 1)
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

// vipSight is what one control-plane node found of the virtual IP: it
// holds it itself (keepalived of this cluster, or one it left behind), or
// a machine answered ARP for it from mac, or nothing answered.
type vipSight struct {
	held bool
	mac  string
}

// vipHeldMark is the line vipProbeScript prints when the node itself
// holds the address.
const vipHeldMark = "held"

// vipProbeScript prints vipHeldMark when the node holds vip; else it asks
// the network on dev who has it, afresh (the node's cached entry is
// dropped first, so that a machine that gave the address up is not taken
// for one that has it) by a ping, or where ping is not installed a TCP
// connection from bash, each bounded by 2 s, and prints the neighbour
// entry the kernel made of the answer.
func vipProbeScript(vip, dev string) string {
	v, d := shellQuote(vip), shellQuote(dev)
	return `if ` + interfaceScript(vip) + ` | grep -q .; then echo ` + vipHeldMark + `; exit 0; fi
ip neigh flush to ` + v + ` dev ` + d + ` 2>/dev/null || true
if command -v ping >/dev/null 2>&1; then timeout 3 ping -c 1 -W 2 ` + v + ` >/dev/null 2>&1
elif command -v bash >/dev/null 2>&1; then timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/22"' ` + v + ` >/dev/null 2>&1
fi
ip neigh show to ` + v + ` dev ` + d + ` 2>/dev/null || true`
}

// parseVIPSight reads vipProbeScript's output: a neighbour entry with a
// link-layer address in any state but FAILED or INCOMPLETE is an answer
// ("10.0.0.200 lladdr 52:54:00:12:34:56 REACHABLE").
func parseVIPSight(out string) vipSight {
	for _, ln := range strings.Split(out, "\n") {
		f := strings.Fields(ln)
		if len(f) == 1 && f[0] == vipHeldMark {
			return vipSight{held: true}
		}
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "lladdr" && !strings.Contains(ln, "FAILED") && !strings.Contains(ln, "INCOMPLETE") {
				return vipSight{mac: f[i+1]}
			}
		}
	}
	return vipSight{}
}

// vipUnclaimed reports whether the cluster has a shared endpoint whose
// VIP no run of it has claimed yet: no create has succeeded.
func (r *run) vipUnclaimed() bool {
	return r.sharedEndpoint() && r.snapshot().Applied == nil
}

// probeVIP asks, from control-plane node n on its interface iface, who
// has the virtual IP.
func (r *run) probeVIP(ctx context.Context, n node, c *transport.Client, iface string) (vipSight, error) {
	res, err := c.Exec(ctx, vipProbeScript(r.cfg.ControlPlaneEndpoint.VIP, iface), transport.ExecOptions{})
	if err != nil {
		return vipSight{}, nodeErr(n, fmt.Errorf("look for controlPlaneEndpoint.vip on the network: %w", err), "")
	}
	return parseVIPSight(string(res.Stdout)), nil
}

// vipTaken refuses a virtual IP another machine answers for: one a
// control-plane node saw answered while none of them holds it. With one
// of them holding it (this cluster's keepalived, on a create's retry),
// the answers are its own. Only a cluster not yet created is judged: the
// VIP never changes afterwards, and this cluster's keepalived may hold it
// on a node an update is removing, which preflight does not visit.
func (r *run) vipTaken() error {
	if !r.vipUnclaimed() {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var seen node
	var mac string
	for _, n := range withRole(r.nodes, model.RoleControlPlane) {
		s := r.facts[n.Name].vip
		if s.held {
			return nil
		}
		if s.mac != "" && mac == "" {
			seen, mac = n, s.mac
		}
	}
	if mac == "" {
		return nil
	}
	vip := r.cfg.ControlPlaneEndpoint.VIP
	return workflow.UserFixable(nodeErr(seen, fmt.Errorf("controlPlaneEndpoint.vip %s is in use: the machine with MAC address %s answers for it on %s's network, and no control-plane node holds it", vip, mac, seen.Name),
		"give an unused address of that network (keepalived would take this one from its owner), or free it there"))
}
