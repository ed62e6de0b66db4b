package validation

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// MaxNodes bounds the nodes of one cluster: zke works on them through
// one SSH connection each, and no install this size has been tried.
const MaxNodes = 1000

// tooManyNodes reports, at "nodes", a node list longer than MaxNodes; the
// nodes themselves are then not checked one by one.
func tooManyNodes(c *collector, nodes []model.Node) bool {
	if len(nodes) <= MaxNodes {
		return false
	}
	c.addf("nodes", "%d nodes given; a cluster has at most %d: split the hosts into several clusters", len(nodes), MaxNodes)
	return true
}

// knownRoles lists the node roles in the order messages name them.
func knownRoles() []model.Role {
	return []model.Role{model.RoleControlPlane, model.RoleEtcd, model.RoleWorker, model.RoleEdge}
}

// validateNodes applies the node rules shared by create and update (seed
// 002) to the nodes of cfg: each node has a valid name, address and role
// set and valid installer settings; no two nodes share a name, an address
// or an internal address; the cluster has at least one controlplane, etcd
// and worker node; and no node is the singlecloud server, whose IP is
// server when it is valid. A list longer than MaxNodes is reported as
// such and not checked further.
func validateNodes(c *collector, cfg model.ClusterConfig, server netip.Addr) {
	nodes := cfg.Nodes
	if tooManyNodes(c, nodes) {
		return
	}
	names := make(map[string]int, len(nodes))
	addrs := make(map[string]int, len(nodes))
	internals := make(map[string]int, len(nodes))
	for i, n := range nodes {
		path := index("nodes", i)
		validateNodeName(c, path+".name", n.Name, names, i)
		if n.Host != "" {
			if p := labelProblem(n.Host); p != "" {
				c.addf(path+".host", "%s (a registered host's name)", p)
			}
		}
		validateNodeAddress(c, path+".address", n.Address, addrs, i, server)
		validateRoles(c, path+".roles", n.Roles)
		validateNodeSettings(c, cfg, i, internals)
	}
	for _, r := range []model.Role{model.RoleControlPlane, model.RoleEtcd, model.RoleWorker} {
		if !slices.ContainsFunc(nodes, func(n model.Node) bool { return n.HasRole(r) }) {
			c.addf("nodes", "at least one %s node is required; give a node the role %s", r, r)
		}
	}
}

// validateNodeName checks the name of node i and records it in seen
// (name → first node index) to find duplicates.
func validateNodeName(c *collector, field, name string, seen map[string]int, i int) {
	if name == "" {
		c.addf(field, "is required: give every node a name")
		return
	}
	if p := labelProblem(name); p != "" {
		c.addf(field, "%s (a node name is a DNS-1123 label)", p)
	}
	if first, dup := seen[name]; dup {
		c.addf(field, "%q is already the name of nodes[%d]; node names must be unique", name, first)
		return
	}
	seen[name] = i
}

// validateNodeAddress checks the address of node i, records it in seen
// (canonical address → first node index) to find duplicates, and rejects
// the singlecloud server's own address.
func validateNodeAddress(c *collector, field, addr string, seen map[string]int, i int, server netip.Addr) {
	if addr == "" {
		c.addf(field, "is required: give the IP address zke reaches the node at over SSH")
		return
	}
	ip, ok := parseIP(addr)
	if !ok {
		c.addf(field, "%q is not an IP address; give the node's IP, like 10.0.0.11", addr)
		return
	}
	if ip.IsUnspecified() {
		c.addf(field, "%s is the unspecified address; give the node's own IP", ip)
		return
	}
	key := ip.String()
	if first, dup := seen[key]; dup {
		c.addf(field, "%s is already the address of nodes[%d]; node addresses must be unique", ip, first)
	} else {
		seen[key] = i
	}
	if server.IsValid() && ip == server {
		c.addf(field, "%s is the singlecloud server itself (singleCloudAddress); singlecloud cannot install a cluster on the host it runs on, so use another host", ip)
	}
}

// validateRoles checks one node's role set: non-empty, known, not
// repeated, controlplane and worker exclusive, etcd and edge only beside
// controlplane or worker.
func validateRoles(c *collector, field string, roles []model.Role) {
	if len(roles) == 0 {
		c.addf(field, "at least one role is required (%s)", roleList(knownRoles(), "or"))
		return
	}
	seen := make(map[model.Role]bool, len(roles))
	for _, r := range roles {
		if !slices.Contains(knownRoles(), r) {
			c.addf(field, "unknown role %q; use %s", r, roleList(knownRoles(), "or"))
			continue
		}
		if seen[r] {
			c.addf(field, "role %s is repeated; list each role once", r)
			continue
		}
		seen[r] = true
	}
	cp, worker := seen[model.RoleControlPlane], seen[model.RoleWorker]
	if cp && worker {
		c.addf(field, "%s and %s are exclusive; a node is either a controlplane or a worker node", model.RoleControlPlane, model.RoleWorker)
	}
	if !cp && !worker {
		var deps []model.Role
		for _, r := range []model.Role{model.RoleEtcd, model.RoleEdge} {
			if seen[r] {
				deps = append(deps, r)
			}
		}
		if len(deps) > 0 {
			c.addf(field, "%s cannot stand alone; add %s or %s to the node", roleList(deps, "and"), model.RoleControlPlane, model.RoleWorker)
		}
	}
}

// roleList renders roles for a message: "a, b or c" (conj "or").
func roleList(roles []model.Role, conj string) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return fmt.Sprintf("%s %s %s", strings.Join(s[:len(s)-1], ", "), conj, s[len(s)-1])
}
