package zke

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// flanneld runs both pod networks this build installs; the plugin picks
// its backend:
//   - model.PluginFlannel: VXLAN. Pod traffic between nodes travels in
//     UDP between the nodes' addresses, so nodes on different subnets,
//     with routers between them, carry it.
//   - model.PluginBridge: host-gw. Each node routes every other node's
//     pod CIDR through that node's address, with no tunnel and no
//     overhead, which needs the nodes on one layer-2 segment. flanneld
//     keeps the routes (it re-adds a missing one within 10 s, and puts
//     them all back when its pod restarts after a reboot), which routes
//     set once from outside never were.
//
// Either way flanneld masquerades what pods send out of the pod network
// (--ip-masq), never pod to pod, and zke writes the node's bridge CNI
// config itself.
const (
	flannelBackendVXLAN  = "vxlan"
	flannelBackendHostGW = "host-gw"
)

// flannelBackend is the flannel backend of plugin's pod network, or ""
// for a plugin flanneld does not run.
func flannelBackend(plugin string) string {
	switch plugin {
	case model.PluginFlannel:
		return flannelBackendVXLAN
	case model.PluginBridge:
		return flannelBackendHostGW
	}
	return ""
}

// runsFlannel says whether the cluster's pod network runs flanneld.
func (r *run) runsFlannel() bool { return flannelBackend(r.cfg.Network.Plugin) != "" }

// hostGWRouteCleanup is the part of a node's clean-up that deletes the
// host-gw routes flanneld added: those to an address inside clusterCIDR
// through one of gateways (the cluster's nodes' addresses). A route of
// the node's own, or one through another gateway, stays. It is one line
// (manualCleanup names it too) and never fails. Every value is
// shell-quoted.
func hostGWRouteCleanup(clusterCIDR string, gateways []string) string {
	p, err := netip.ParsePrefix(clusterCIDR)
	if err != nil || len(gateways) == 0 {
		return "true"
	}
	family := "-4"
	if p.Addr().Is6() {
		family = "-6"
	}
	// Each gateway is a quoted word of the case pattern: matched as it
	// is, never as a pattern.
	return fmt.Sprintf(`ip %[1]s route show root %[2]s 2>/dev/null | while read -r dst via gw rest; do `+
		`[ "$via" = via ] || continue; case "$gw" in %[3]s) ip %[1]s route del "$dst" via "$gw" 2>/dev/null || true;; esac; done; true`,
		family, shellQuote(p.Masked().String()), strings.Join(quoteEach(gateways), "|"))
}

// canonicalAddr is IP address s as ip(8) prints it (an IPv6 address
// compressed), or s when it is not one.
func canonicalAddr(s string) string {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.String()
	}
	return s
}

// quoteEach shell-quotes each of values.
func quoteEach(values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = shellQuote(v)
	}
	return out
}

// podNetCleanup is what a node's clean-up removes of the pod network
// flanneld ran: with Flannel, its device, lease and chains, and the
// host-gw routes to ClusterCIDR through Gateways (the cluster's nodes).
type podNetCleanup struct {
	Flannel     bool
	ClusterCIDR string
	Gateways    []string
}

// podNetCleanup is the cluster's podNetCleanup: every node of the run,
// and every node it removes, is a gateway a host-gw route may go through.
func (r *run) podNetCleanup() podNetCleanup {
	if !r.runsFlannel() {
		return podNetCleanup{}
	}
	pn := podNetCleanup{Flannel: true, ClusterCIDR: r.cfg.ClusterCIDR}
	for _, n := range append(slices.Clone(r.nodes), r.removedNodes()...) {
		pn.Gateways = append(pn.Gateways, canonicalAddr(n.InternalAddress))
	}
	return pn
}
