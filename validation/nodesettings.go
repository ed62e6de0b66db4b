package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// validateNodeSettings checks the installer settings of node i of cfg
// (issue 4): its internal address (recorded in internals, canonical address
// → first node index, to find duplicates), SSH settings, socket and prefix
// paths, labels, taints and kubelet overrides. A value the node inherited
// from the cluster (sshUser, sshPort, internalAddress from address) is
// reported once, at the field it came from, not again on every node.
func validateNodeSettings(c *collector, cfg model.ClusterConfig, i int, internals map[string]int) {
	n := cfg.Nodes[i]
	path := index("nodes", i)
	validateInternalAddress(c, path+".internalAddress", cfg.Nodes, i, internals)
	if p := portProblem(int(n.SSHPort)); p != "" && n.SSHPort != cfg.SSHPort {
		c.addf(path+".sshPort", "%s", p)
	}
	switch {
	case n.SSHUser == "" && cfg.SSHUser != "":
		c.addf(path+".sshUser", "is required: give the user zke logs in to this node as, or leave it out to use the cluster's sshUser")
	case n.SSHUser != cfg.SSHUser:
		if p := sshUserProblem(n.SSHUser); p != "" {
			c.addf(path+".sshUser", "%s", p)
		}
	}
	if p := socketPathProblem(n.DockerSocket, model.DefaultDockerSocket); p != "" {
		c.addf(path+".dockerSocket", "%s", p)
	}
	if p := socketPathProblem(n.ContainerdSocket, model.DefaultContainerdSocket); p != "" {
		c.addf(path+".containerdSocket", "%s", p)
	}
	if p := nodePathProblem(n.PrefixPath, "/opt/zke"); p != "" {
		c.addf(path+".prefixPath", "%s", p)
	}
	validateLabels(c, path+".labels", n.Labels)
	validateTaints(c, path+".taints", n.Taints)
	validateKubelet(c, path+".kubelet", n.Kubelet)
}

// validateInternalAddress checks the internal address of node i: an IP of
// the node's own (components bind to it, never to every interface) that no
// other node uses. When it is the node's address verbatim, the address
// checks have reported what is wrong with it already, so only a clash with
// another node's explicit internal address is added.
func validateInternalAddress(c *collector, field string, nodes []model.Node, i int, seen map[string]int) {
	n := nodes[i]
	inherited := n.InternalAddress == n.Address
	if n.InternalAddress == "" {
		if !inherited {
			c.addf(field, "is required: give the IP the node's components bind to, or leave it out to use address")
		}
		return
	}
	ip, ok := parseIP(n.InternalAddress)
	if !ok {
		if !inherited {
			c.addf(field, "%q is not an IP address; give the IP the node's components bind to and other nodes reach it at, like 10.0.0.11", n.InternalAddress)
		}
		return
	}
	if ip.IsUnspecified() {
		if !inherited {
			c.addf(field, "%s is the unspecified address; components never bind to every interface, so give the node's own IP", ip)
		}
		return
	}
	key := ip.String()
	first, dup := seen[key]
	if !dup {
		seen[key] = i
		return
	}
	if inherited && nodes[first].InternalAddress == nodes[first].Address {
		return // both follow their addresses: the duplicate address is reported
	}
	c.addf(field, "%s is already the internal address of nodes[%d]; internal addresses must be unique", ip, first)
}

// validateKubelet checks a node's kubelet overrides: a cgroupRoot that is
// a node path when set, and extra flags whose names match flagNameRE, are
// not flags zke sets itself, and whose values are one line of sensible
// length.
func validateKubelet(c *collector, field string, k model.KubeletOverrides) {
	if k.CgroupRoot != "" {
		if p := nodePathProblem(k.CgroupRoot, "/zke-node1"); p != "" {
			c.addf(field+".cgroupRoot", "%s", p)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(k.ExtraArgs)) {
		f := fmt.Sprintf("%s.extraArgs[%q]", field, name)
		if p := flagNameProblem(name); p != "" {
			c.addf(f, "%s", p)
			continue
		}
		if p := flagValueProblem(k.ExtraArgs[name]); p != "" {
			c.addf(f, "%s", p)
		}
	}
}

// zkeKubeletFlags are the kubelet flags zke sets itself (see zke's
// kubeletArgs); an extra flag of the same name would contradict them.
func zkeKubeletFlags() []string {
	return []string{"config", "kubeconfig", "hostname-override", "node-ip", "root-dir", "cert-dir"}
}

// flagNameProblem says why name cannot be the key of an extra kubelet
// flag, or returns "" when it can: it must match flagNameRE.
func flagNameProblem(name string) string {
	const like = "give the name of a kubelet flag, like max-pods"
	if len(name) > maxFlagNameLen {
		return fmt.Sprintf("flag name is %d characters long; %s", len(name), like)
	}
	switch {
	case strings.TrimLeft(name, "-") == "":
		return "flag name is empty; " + like
	case strings.HasPrefix(name, "-"):
		return fmt.Sprintf("write the flag name without leading dashes: %q, not %q", strings.TrimLeft(name, "-"), name)
	case strings.ContainsRune(name, '='):
		return fmt.Sprintf("flag name %q contains '='; put the flag's value in the map value", name)
	case strings.ContainsFunc(name, unicode.IsSpace):
		return fmt.Sprintf("flag name %q contains white space; %s", name, like)
	case !flagNameRE.MatchString(name):
		return fmt.Sprintf("flag name %q may contain only lower-case letters, digits and '-'; %s", name, like)
	case slices.Contains(zkeKubeletFlags(), name):
		return fmt.Sprintf("flag %q is set by zke itself; remove it from extraArgs", name)
	}
	return ""
}

// internalAddressOf is the address n's components bind to: its internal
// address, or its address in a config stored before internal addresses
// were defaulted.
func internalAddressOf(n model.Node) string {
	if n.InternalAddress == "" {
		return n.Address
	}
	return n.InternalAddress
}

// prefixPathOf is the prefix of zke's directories on n, defaulted like
// ApplyDefaults does for configs stored before prefixes existed.
func prefixPathOf(n model.Node) string {
	if n.PrefixPath == "" {
		return model.DefaultPrefixPath
	}
	return n.PrefixPath
}

// followsAddress reports whether n's internal address is its address.
func followsAddress(n model.Node) bool {
	return sameAddress(internalAddressOf(n), n.Address)
}
