package validation

import (
	"slices"
	"strconv"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// changeableFields names what an update may change, for messages.
const changeableFields = "only nodes, sshUser, sshKey, sshPort, singleCloudAddress, images, imageArchive, stepDeadlines, certificates, snapshots, upgrade and kubernetesVersion (an upgrade) may change"

// validateUnchanged reports every field other than the nodes, the SSH
// settings, singleCloudAddress, the images and the step deadlines that
// differs between old and newCfg.
func validateUnchanged(c *collector, old, newCfg model.ClusterConfig) {
	scalars := []struct {
		field    string
		old, new string
	}{
		{"name", old.Name, newCfg.Name},
		{"clusterDomain", old.ClusterDomain, newCfg.ClusterDomain},
		{"clusterCidr", old.ClusterCIDR, newCfg.ClusterCIDR},
		{"serviceCidr", old.ServiceCIDR, newCfg.ServiceCIDR},
		{"clusterDNSServiceIP", old.ClusterDNSServiceIP, newCfg.ClusterDNSServiceIP},
		{"network.plugin", old.Network.Plugin, newCfg.Network.Plugin},
		{"network.iface", old.Network.Iface, newCfg.Network.Iface},
		{"controlPlaneEndpoint.vip", endpointVIP(old), endpointVIP(newCfg)},
	}
	for _, s := range scalars {
		if s.old != s.new {
			c.addf(s.field, "cannot change after create; keep %q (%s)", s.old, changeableFields)
		}
	}
	if !slices.Equal(old.ClusterUpstreamDNS, newCfg.ClusterUpstreamDNS) {
		c.addf("clusterUpstreamDNS", "cannot change after create; keep %q (%s)", old.ClusterUpstreamDNS, changeableFields)
	}
	// Registries hold passwords: say that they differ, never how.
	if !slices.Equal(old.PrivateRegistries, newCfg.PrivateRegistries) {
		c.addf("privateRegistries", "cannot change after create; send the registries the cluster was created with (%s)", changeableFields)
	}
}

// endpointVIP is the config's shared endpoint VIP, "" for none.
func endpointVIP(c model.ClusterConfig) string {
	if c.ControlPlaneEndpoint == nil {
		return ""
	}
	return c.ControlPlaneEndpoint.VIP
}

// validateKeptNodes reports every kept controlplane or etcd node of old
// that is present in newCfg under its name with another address, other
// roles, another internal address or another prefix path (its etcd peers,
// certificates and data depend on them), and every removal of such nodes
// that the cluster cannot survive (validateRemovals). shared says the
// cluster has a shared API endpoint: no node is then the endpoint.
func validateKeptNodes(c *collector, old, newNodes []model.Node, shared bool) {
	var removed []model.Node
	for _, o := range old {
		kind := model.RoleEtcd
		switch {
		case o.HasRole(model.RoleControlPlane):
			kind = model.RoleControlPlane
		case o.HasRole(model.RoleEtcd):
		default:
			continue // workers and edge workers may be removed
		}
		j := slices.IndexFunc(newNodes, func(n model.Node) bool { return n.Name == o.Name })
		if j < 0 {
			removed = append(removed, o)
			continue
		}
		n := newNodes[j]
		path := index("nodes", j)
		if !sameAddress(o.Address, n.Address) {
			c.addf(path+".address", "%s node %q must keep its address %s", kind, o.Name, o.Address)
		}
		if !sameRoles(o.Roles, n.Roles) {
			c.addf(path+".roles", "%s node %q must keep its roles %s", kind, o.Name, roleList(o.Roles, "and"))
		}
		validateKeptSettings(c, path, kind, o, n)
	}
	validateRemovals(c, old, newNodes, removed, shared)
	if !shared {
		validateEndpointKept(c, old, newNodes)
	}
}

// validateEndpointKept reports an update that makes another node the first
// controlplane node while the old first one stays: zke points every
// kubelet, kube-proxy and the admin kubeconfig at the first one, and the
// running ones would not follow.
func validateEndpointKept(c *collector, old, newNodes []model.Node) {
	isCP := func(n model.Node) bool { return n.HasRole(model.RoleControlPlane) }
	o, n := slices.IndexFunc(old, isCP), slices.IndexFunc(newNodes, isCP)
	if o < 0 || n < 0 || old[o].Name == newNodes[n].Name {
		return
	}
	if !slices.ContainsFunc(newNodes, func(x model.Node) bool { return x.Name == old[o].Name }) {
		return // removed: validateRemovals reports it
	}
	c.addf("nodes", "controlplane node %q must stay the first controlplane node in the list: it is the API endpoint every kubelet, kube-proxy and the admin kubeconfig use; list %q after it", old[o].Name, newNodes[n].Name)
}

// validateRemovals reports removed controlplane and etcd nodes that the
// cluster cannot lose in this update: the controlplane node that every
// kubelet, kube-proxy and the admin kubeconfig reach (the first one,
// unless the cluster has a shared endpoint), a node whose address a new node
// takes (a rename: remove it in one update, add the new one in the next),
// and etcd members whose removal would leave fewer than a majority of the
// current members to agree on it (remove them one at a time).
func validateRemovals(c *collector, old, newNodes []model.Node, removed []model.Node, shared bool) {
	if len(removed) == 0 {
		return
	}
	endpoint := -1
	if !shared {
		endpoint = slices.IndexFunc(old, func(n model.Node) bool { return n.HasRole(model.RoleControlPlane) })
	}
	etcdBefore, etcdRemoved := 0, []string{}
	for _, o := range old {
		if o.HasRole(model.RoleEtcd) {
			etcdBefore++
		}
	}
	for _, o := range removed {
		kind := model.RoleEtcd
		if o.HasRole(model.RoleControlPlane) {
			kind = model.RoleControlPlane
		}
		switch {
		case endpoint >= 0 && o.Name == old[endpoint].Name:
			c.addf("nodes", "controlplane node %q (%s) cannot be removed: it is the API endpoint every kubelet, kube-proxy and the admin kubeconfig use, and the cluster has no shared endpoint (controlPlaneEndpoint) to move them to; remove another controlplane node", o.Name, o.Address)
			continue
		case slices.ContainsFunc(newNodes, func(n model.Node) bool { return sameAddress(n.Address, o.Address) }):
			c.addf("nodes", "%s node %q (%s) cannot be renamed; remove it in one update and add the new node in the next", kind, o.Name, o.Address)
			continue
		}
		if o.HasRole(model.RoleEtcd) {
			etcdRemoved = append(etcdRemoved, o.Name)
		}
	}
	if n := len(etcdRemoved); n > 0 && etcdBefore-n <= etcdBefore/2 {
		c.addf("nodes", "removing etcd node(s) %s would leave %d of the %d etcd members, not a majority, to agree on the change; remove one member at a time, and grow a 2-member etcd before shrinking it",
			strings.Join(quoteAll(etcdRemoved), ", "), etcdBefore-n, etcdBefore)
	}
}

// quoteAll quotes every name, for messages.
func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// validateKeptSettings reports a change of internalAddress or prefixPath
// of the kept controlplane or etcd node o, now n at path. An internal
// address that followed a changed address on both sides is not reported
// again: the address change is.
func validateKeptSettings(c *collector, path string, kind model.Role, o, n model.Node) {
	oldIP, newIP := internalAddressOf(o), internalAddressOf(n)
	moved := !sameAddress(o.Address, n.Address) && followsAddress(o) && followsAddress(n)
	if !sameAddress(oldIP, newIP) && !moved {
		c.addf(path+".internalAddress", "cannot change after create; %s node %q must keep its internal address %s, which its certificates and etcd peers use", kind, o.Name, oldIP)
	}
	if oldPrefix := prefixPathOf(o); oldPrefix != prefixPathOf(n) {
		c.addf(path+".prefixPath", "cannot change after create; %s node %q must keep prefixPath %q, under which its certificates and data live", kind, o.Name, oldPrefix)
	}
}

// sameRoles reports whether a and b hold the same roles, in any order.
func sameRoles(a, b []model.Role) bool {
	return slices.Equal(roleSet(a), roleSet(b))
}

// roleSet returns roles sorted and without repeats, leaving roles untouched.
func roleSet(roles []model.Role) []model.Role {
	s := slices.Clone(roles)
	slices.Sort(s)
	return slices.Compact(s)
}
