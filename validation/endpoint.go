package validation

import (
	"net/netip"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// validateControlPlaneEndpoint checks a shared endpoint's VIP: an IPv4
// address that can be a host's (not loopback, multicast, link-local or
// unspecified), no node's address, and outside the cluster's pod and
// service networks.
func validateControlPlaneEndpoint(c *collector, cfg model.ClusterConfig) {
	ep := cfg.ControlPlaneEndpoint
	if ep == nil {
		return
	}
	const field = "controlPlaneEndpoint.vip"
	ip, err := netip.ParseAddr(ep.VIP)
	switch {
	case ep.VIP == "":
		c.addf(field, "is required: give an unused IPv4 address of the control-plane nodes' network, or remove controlPlaneEndpoint")
		return
	case err != nil || !ip.Is4():
		c.addf(field, "%q is not an IPv4 address", ep.VIP)
		return
	case ip.IsLoopback() || ip.IsMulticast() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		c.addf(field, "%s cannot be a host's address; give an unused address of the control-plane nodes' network", ep.VIP)
		return
	}
	for i, n := range cfg.Nodes {
		if sameAddress(n.Address, ep.VIP) || sameAddress(n.InternalAddress, ep.VIP) {
			c.addf(field, "%s is the address of node %q (nodes[%d]); the virtual IP must be an address no host has", ep.VIP, n.Name, i)
		}
	}
	for _, net := range []struct{ name, cidr string }{{"clusterCidr", cfg.ClusterCIDR}, {"serviceCidr", cfg.ServiceCIDR}} {
		if p, err := netip.ParsePrefix(net.cidr); err == nil && p.Contains(ip) {
			c.addf(field, "%s is inside %s %s; give an address of the nodes' network", ep.VIP, net.name, net.cidr)
		}
	}
}
