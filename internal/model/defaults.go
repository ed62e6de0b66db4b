package model

import "strings"

// Network plugins singlecloud can install (SPEC §3).
const (
	PluginFlannel = "flannel"
	PluginCalico  = "calico"
)

// Defaults filled in by ApplyDefaults for fields the user left empty
// (SPEC §3). They match singlecloud's so that existing clients, which often
// send only the nodes and the SSH settings, get the same clusters.
const (
	// DefaultSSHPort is the port sshd listens on unless the admin says otherwise.
	DefaultSSHPort = 22
	// DefaultClusterDomain is the DNS suffix of in-cluster service names.
	DefaultClusterDomain = "cluster.local"
	// DefaultClusterCIDR is the pod network.
	DefaultClusterCIDR = "10.42.0.0/16"
	// DefaultServiceCIDR is the service (ClusterIP) network; it must not
	// overlap DefaultClusterCIDR.
	DefaultServiceCIDR = "10.43.0.0/16"
	// DefaultClusterDNSServiceIP is the ClusterIP of the cluster DNS
	// service; it lies inside DefaultServiceCIDR.
	DefaultClusterDNSServiceIP = "10.43.0.10"
	// DefaultNetworkPlugin is the pod network plugin.
	DefaultNetworkPlugin = PluginFlannel
	// DefaultKubernetesVersion is the Kubernetes release zke installs.
	DefaultKubernetesVersion = "v1.36.3"
)

// ApplyDefaults normalises c in place before validation: it trims
// surrounding white space from every string field, lower-cases node roles
// and the network plugin, and fills the defaults above into empty fields.
// Registry passwords are the one exception to trimming: they are secrets
// whose every character may count, so they are kept verbatim. ApplyDefaults
// is idempotent and never reports an error; bad values are left for
// validation to name.
func (c *ClusterConfig) ApplyDefaults() {
	if c == nil {
		return
	}
	c.Name = strings.TrimSpace(c.Name)
	c.SSHUser = strings.TrimSpace(c.SSHUser)
	c.SSHKey = strings.TrimSpace(c.SSHKey)
	c.SingleCloudAddress = strings.TrimSpace(c.SingleCloudAddress)
	c.ClusterDomain = strings.TrimSpace(c.ClusterDomain)
	c.ClusterCIDR = strings.TrimSpace(c.ClusterCIDR)
	c.ServiceCIDR = strings.TrimSpace(c.ServiceCIDR)
	c.ClusterDNSServiceIP = strings.TrimSpace(c.ClusterDNSServiceIP)
	c.Network.Plugin = strings.ToLower(strings.TrimSpace(c.Network.Plugin))
	c.Network.Iface = strings.TrimSpace(c.Network.Iface)
	c.KubernetesVersion = strings.TrimSpace(c.KubernetesVersion)

	for i := range c.Nodes {
		n := &c.Nodes[i]
		n.Name = strings.TrimSpace(n.Name)
		n.Address = strings.TrimSpace(n.Address)
		for j, r := range n.Roles {
			n.Roles[j] = Role(strings.ToLower(strings.TrimSpace(string(r))))
		}
	}
	for i, s := range c.ClusterUpstreamDNS {
		c.ClusterUpstreamDNS[i] = strings.TrimSpace(s)
	}
	for i := range c.PrivateRegistries {
		r := &c.PrivateRegistries[i]
		r.URL = strings.TrimSpace(r.URL)
		r.User = strings.TrimSpace(r.User)
		r.CACert = strings.TrimSpace(r.CACert)
	}

	if c.SSHPort == 0 {
		c.SSHPort = DefaultSSHPort
	}
	setDefault(&c.ClusterDomain, DefaultClusterDomain)
	setDefault(&c.ClusterCIDR, DefaultClusterCIDR)
	setDefault(&c.ServiceCIDR, DefaultServiceCIDR)
	setDefault(&c.ClusterDNSServiceIP, DefaultClusterDNSServiceIP)
	setDefault(&c.Network.Plugin, DefaultNetworkPlugin)
	setDefault(&c.KubernetesVersion, DefaultKubernetesVersion)
}

// ApplyDefaults normalises r in place before validation: it trims the name.
// The kubeconfig is kept verbatim; the connector checks its content.
func (r *ImportRequest) ApplyDefaults() {
	if r == nil {
		return
	}
	r.Name = strings.TrimSpace(r.Name)
}

// setDefault stores def into *s when *s is empty.
func setDefault(s *string, def string) {
	if *s == "" {
		*s = def
	}
}
