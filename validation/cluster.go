package validation

import (
	"net/netip"
	"slices"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// ValidateCreate checks the config of a new cluster against every create
// rule of SPEC §4 and seed 002. c must already have had ApplyDefaults
// applied. It returns nil, or Errors holding every violation at once, each
// with its JSON field path; the result matches ErrInvalid.
func ValidateCreate(c model.ClusterConfig) error {
	var errs collector
	validateClusterName(&errs, "name", c.Name)
	validateSSH(&errs, c)
	server := validateSingleCloudAddress(&errs, c.SingleCloudAddress)
	validateClusterDomain(&errs, c.ClusterDomain)
	validateNetworks(&errs, c)
	validateRegistries(&errs, c.PrivateRegistries)
	validateKubernetesVersion(&errs, c.KubernetesVersion)
	validateImages(&errs, c.Images)
	validateImageArchive(&errs, c.ImageArchive)
	validateArtifactMirror(&errs, c.ArtifactMirror)
	validateImageRepository(&errs, c.ImageRepository)
	validateStepDeadlines(&errs, c.StepDeadlines)
	validateSnapshots(&errs, c.Snapshots)
	validateControlPlaneEndpoint(&errs, c)
	validateNodes(&errs, c, server)
	return errs.err()
}

// ValidateUpdate checks a changed config newCfg of an existing cluster whose
// current config is old. Both must have had ApplyDefaults applied.
//
// Only the nodes, the SSH settings (sshUser, sshKey, sshPort),
// singleCloudAddress, images, imageArchive, artifactMirror, imageRepository, stepDeadlines, certificates
// snapshots, upgrade and kubernetesVersion may change; any other field that differs from old
// (controlPlaneEndpoint included, for now) is reported as "<field>: cannot
// change after create"; kubernetesVersion may move as Kubernetes'
// version-skew policy allows (validateVersionChange), which starts an
// upgrade. The node rules of
// create apply to newCfg. A kept controlplane or etcd node must keep its
// address, roles, internalAddress and prefixPath; such nodes may be
// removed one etcd member at a time, never below a majority, and the
// first controlplane node only when the cluster has a shared endpoint
// (validateRemovals). Other per-node settings (SSH, sockets, labels,
// taints, kubelet overrides) may change on any node.
//
// sshKey and registry passwords are write-only in the API, so an update
// request usually leaves them empty, meaning "keep the old one". The caller
// fills them in from old before calling ValidateUpdate, which then checks
// the key like create does and compares registries including passwords.
func ValidateUpdate(old, newCfg model.ClusterConfig) error {
	var errs collector
	validateUnchanged(&errs, old, newCfg)
	validateSSH(&errs, newCfg)
	server := validateSingleCloudAddress(&errs, newCfg.SingleCloudAddress)
	validateImages(&errs, newCfg.Images)
	validateImageArchive(&errs, newCfg.ImageArchive)
	validateArtifactMirror(&errs, newCfg.ArtifactMirror)
	validateImageRepository(&errs, newCfg.ImageRepository)
	validateStepDeadlines(&errs, newCfg.StepDeadlines)
	validateSnapshots(&errs, newCfg.Snapshots)
	validateControlPlaneEndpoint(&errs, newCfg)
	validateKubernetesVersion(&errs, newCfg.KubernetesVersion)
	validateVersionChange(&errs, old, newCfg)
	validateNodes(&errs, newCfg, server)
	if len(newCfg.Nodes) <= MaxNodes {
		validateKeptNodes(&errs, old.Nodes, newCfg.Nodes, old.SharedEndpoint() != "")
	}
	return errs.err()
}

// validateClusterName checks a cluster name: required, a DNS-1123 label.
func validateClusterName(c *collector, field, name string) {
	if name == "" {
		c.addf(field, "is required: give the cluster a name")
		return
	}
	if p := labelProblem(name); p != "" {
		c.addf(field, "%s (a cluster name is a DNS-1123 label)", p)
	}
}

// validateSSH checks the settings zke logs in to the nodes with.
func validateSSH(c *collector, cfg model.ClusterConfig) {
	if cfg.SSHUser == "" {
		c.addf("sshUser", "is required: give the user zke logs in to the nodes as")
	} else if p := sshUserProblem(cfg.SSHUser); p != "" {
		c.addf("sshUser", "%s", p)
	}
	if p := sshKeyProblem(cfg.SSHKey); p != "" {
		c.addf("sshKey", "%s", p)
	}
	if p := portProblem(int(cfg.SSHPort)); p != "" {
		c.addf("sshPort", "%s", p)
	}
}

// validateSingleCloudAddress checks the ip:port the nodes reach singlecloud
// at and returns its IP, or the zero Addr when it is not valid.
func validateSingleCloudAddress(c *collector, addr string) netip.Addr {
	if addr == "" {
		c.addf("singleCloudAddress", "is required: give the ip:port the nodes reach singlecloud at, like 10.0.0.9:8088")
		return netip.Addr{}
	}
	ip, p := splitHostPortIP(addr)
	if p != "" {
		c.addf("singleCloudAddress", "%s", p)
	}
	return ip
}

// validateClusterDomain checks the DNS suffix of in-cluster names.
func validateClusterDomain(c *collector, domain string) {
	if domain == "" {
		c.addf("clusterDomain", "is required: give the cluster's DNS domain, like %s", model.DefaultClusterDomain)
		return
	}
	if p := subdomainProblem(domain); p != "" {
		c.addf("clusterDomain", "%s", p)
	}
}

// validateNetworks checks the pod and service networks, the cluster DNS
// service IP, the upstream DNS servers and the network plugin.
func validateNetworks(c *collector, cfg model.ClusterConfig) {
	pods, podsOK := validateCIDR(c, "clusterCidr", cfg.ClusterCIDR)
	services, servicesOK := validateCIDR(c, "serviceCidr", cfg.ServiceCIDR)
	if podsOK && servicesOK && pods.Overlaps(services) {
		c.addf("serviceCidr", "%s overlaps clusterCidr %s; the pod and service networks must not share addresses", services, pods)
	}
	validateDNSServiceIP(c, cfg.ClusterDNSServiceIP, services, servicesOK)
	for i, s := range cfg.ClusterUpstreamDNS {
		field := index("clusterUpstreamDNS", i)
		if s == "" {
			c.addf(field, "is empty; give a DNS server IP or remove the entry")
		} else if _, ok := parseIP(s); !ok {
			c.addf(field, "%q is not an IP address; give the IP of a DNS server, like 8.8.8.8", s)
		}
	}
	if cfg.Network.Iface != "" {
		if p := ifaceProblem(cfg.Network.Iface); p != "" {
			c.addf("network.iface", "%s", p)
		}
	}
	switch p := cfg.Network.Plugin; {
	case slices.Contains(NetworkPlugins(), p) && podsOK && pods.Addr().Is6():
		// flanneld runs both plugins; its IPv6 routes and device are
		// untested.
		c.addf("clusterCidr", "%s is an IPv6 network, which this build's pod networks (flanneld, for %s) do not support yet; use an IPv4 clusterCidr", pods, orList(NetworkPlugins()))
	case slices.Contains(NetworkPlugins(), p):
	case p == "":
		c.addf("network.plugin", "is required: use %s", orList(NetworkPlugins()))
	case p == model.PluginCalico:
		c.addf("network.plugin", "%q cannot be installed by this build (its images are not bundled); this build installs %s", p, orList(NetworkPlugins()))
	default:
		c.addf("network.plugin", "%q is not a supported network plugin; use %s", p, orList(NetworkPlugins()))
	}
}

// NetworkPlugins lists the network plugins this build installs, in the
// order messages name them: what validation accepts and the console
// offers (a console test holds the two together).
func NetworkPlugins() []string {
	return []string{model.PluginFlannel, model.PluginBridge}
}

// validateCIDR checks one network and returns it when it is valid.
func validateCIDR(c *collector, field, s string) (netip.Prefix, bool) {
	if s == "" {
		c.addf(field, "is required: give a network like 10.42.0.0/16")
		return netip.Prefix{}, false
	}
	p, problem := parseCIDR(s)
	if problem != "" {
		c.addf(field, "%s", problem)
		return netip.Prefix{}, false
	}
	return p, true
}

// validateDNSServiceIP checks the cluster DNS service IP: an IP inside the
// service network, neither its network address nor its first address
// (which Kubernetes gives to the API server's service).
func validateDNSServiceIP(c *collector, s string, services netip.Prefix, servicesOK bool) {
	const field = "clusterDNSServiceIP"
	if s == "" {
		c.addf(field, "is required: give an IP inside serviceCidr, like %s", model.DefaultClusterDNSServiceIP)
		return
	}
	ip, ok := parseIP(s)
	if !ok {
		c.addf(field, "%q is not an IP address; give an IP inside serviceCidr, like %s", s, model.DefaultClusterDNSServiceIP)
		return
	}
	if !servicesOK {
		return // serviceCidr is reported already; nothing to compare with
	}
	switch {
	case !services.Contains(ip):
		c.addf(field, "%s is outside serviceCidr %s; pick an IP inside it", ip, services)
	case ip == services.Addr():
		c.addf(field, "%s is the network address of serviceCidr %s; pick another IP inside it", ip, services)
	case ip == services.Addr().Next():
		c.addf(field, "%s is taken by the Kubernetes API service (the first IP of serviceCidr %s); pick another IP inside it", ip, services)
	}
}

// validateKubernetesVersion checks the release zke installs.
func validateKubernetesVersion(c *collector, v string) {
	if v == "" {
		c.addf("kubernetesVersion", "is required: give a release like %s", model.DefaultKubernetesVersion)
		return
	}
	if p := versionProblem(v); p != "" {
		c.addf("kubernetesVersion", "%s", p)
	}
}
