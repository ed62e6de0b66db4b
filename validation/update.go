package validation

import (
	"slices"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// changeableFields names what an update may change, for messages.
const changeableFields = "only nodes, sshUser, sshKey, sshPort, singleCloudAddress, images, imageArchive and stepDeadlines may change"

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
		{"kubernetesVersion", old.KubernetesVersion, newCfg.KubernetesVersion},
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

// validateKeptNodes reports every controlplane or etcd node of old that is
// missing from newCfg, or present under its name with another address,
// other roles, another internal address or another prefix path: its etcd
// peers, certificates and data depend on them.
func validateKeptNodes(c *collector, old, newNodes []model.Node) {
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
			c.addf("nodes", "%s node %q (%s) cannot be removed; controlplane and etcd nodes may be added, never removed, so put it back", kind, o.Name, o.Address)
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
