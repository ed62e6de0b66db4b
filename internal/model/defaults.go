package model

import "strings"

// Network plugins singlecloud can install (SPEC §3).
const (
	// PluginFlannel runs flannel as the pod network with its VXLAN
	// backend: a tunnel between the nodes, so that nodes on different
	// subnets carry it.
	PluginFlannel = "flannel"
	// PluginCalico runs calico as the pod network (refused at
	// validation: this build cannot install it).
	PluginCalico = "calico"
	// PluginBridge runs flannel with its host-gw backend: each node's
	// bridge, and a route on every other node to its pod CIDR through
	// its address, with no tunnel, for nodes on one layer-2 network.
	// flanneld keeps the routes (earlier releases set them once, and a
	// reboot lost them).
	PluginBridge = "bridge"
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
	// DefaultNetworkPlugin is the pod network plugin: flannel, which
	// crosses subnets, as every peer's default overlay does (calico is
	// refused at validation).
	DefaultNetworkPlugin = PluginFlannel
	// DefaultKubernetesVersion is the Kubernetes release zke installs.
	DefaultKubernetesVersion = "v1.37.2"
)

// Per-node defaults filled in by ApplyDefaults (issue 4). A node's empty
// internalAddress, sshPort and sshUser come from its address and the
// cluster's SSH settings instead.
const (
	// DefaultDockerSocket is where Docker Engine listens on a stock install;
	// zke drives every container through it.
	DefaultDockerSocket = "/var/run/docker.sock"
	// DefaultContainerdSocket is containerd's stock CRI endpoint, the one
	// the kubelet talks to.
	DefaultContainerdSocket = "/run/containerd/containerd.sock"
	// DefaultPrefixPath puts zke's directories (/etc/kubernetes,
	// /var/lib/etcd, ...) at their usual places; another prefix moves them
	// all, for hosts whose root is read-only or shared.
	DefaultPrefixPath = "/"
)

// ApplyDefaults normalises c in place before validation: it trims
// surrounding white space from every string field (map keys and values
// included), lower-cases node roles and the network plugin, and fills the
// defaults above into empty fields; each node then inherits what it leaves
// empty: internalAddress from its address, sshPort and sshUser from the
// cluster's. Registry passwords are the one exception to trimming: they are
// secrets whose every character may count, so they are kept verbatim. A map
// key is not trimmed when that would merge it with another key; validation
// then names it. ApplyDefaults is idempotent and never reports an error;
// bad values are left for validation to name.
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
	c.Images = trimMap(c.Images)
	c.ImageArchive = strings.TrimSpace(c.ImageArchive)
	c.ArtifactMirror = strings.TrimSpace(c.ArtifactMirror)
	c.ImageRepository = strings.TrimSuffix(strings.TrimSpace(c.ImageRepository), "/")
	c.StepDeadlines = trimMap(c.StepDeadlines)
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

	for i := range c.Nodes {
		c.Nodes[i].applyDefaults(c.SSHUser, c.SSHPort)
	}
}

// applyDefaults normalises n like ClusterConfig.ApplyDefaults does, with
// sshUser and sshPort the cluster's, already normalised.
func (n *Node) applyDefaults(sshUser string, sshPort Port) {
	n.Name = strings.TrimSpace(n.Name)
	n.Address = strings.TrimSpace(n.Address)
	for j, r := range n.Roles {
		n.Roles[j] = Role(strings.ToLower(strings.TrimSpace(string(r))))
	}
	n.InternalAddress = strings.TrimSpace(n.InternalAddress)
	n.SSHUser = strings.TrimSpace(n.SSHUser)
	n.DockerSocket = strings.TrimSpace(n.DockerSocket)
	n.ContainerdSocket = strings.TrimSpace(n.ContainerdSocket)
	n.PrefixPath = strings.TrimSpace(n.PrefixPath)
	n.Labels = trimMap(n.Labels)
	for j := range n.Taints {
		t := &n.Taints[j]
		t.Key = strings.TrimSpace(t.Key)
		t.Value = strings.TrimSpace(t.Value)
		t.Effect = strings.TrimSpace(t.Effect)
	}
	n.Kubelet.CgroupRoot = strings.TrimSpace(n.Kubelet.CgroupRoot)
	n.Kubelet.ExtraArgs = trimMap(n.Kubelet.ExtraArgs)

	setDefault(&n.InternalAddress, n.Address)
	if n.SSHPort == 0 {
		n.SSHPort = sshPort
	}
	setDefault(&n.SSHUser, sshUser)
	setDefault(&n.DockerSocket, DefaultDockerSocket)
	setDefault(&n.ContainerdSocket, DefaultContainerdSocket)
	setDefault(&n.PrefixPath, DefaultPrefixPath)
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

// trimMap trims the keys and values of m. Values are trimmed in place; when
// a key needs trimming it returns a new map, keeping verbatim every key
// whose trimmed form another key shares, so that no entry is lost and the
// result does not depend on map order. A nil or empty m is returned as is.
func trimMap(m map[string]string) map[string]string {
	trimmed := make(map[string]int, len(m))
	rekey := false
	for k, v := range m {
		t := strings.TrimSpace(k)
		trimmed[t]++
		rekey = rekey || t != k
		m[k] = strings.TrimSpace(v)
	}
	if !rekey {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if t := strings.TrimSpace(k); trimmed[t] == 1 {
			k = t
		}
		out[k] = v
	}
	return out
}
