// Package model holds the cluster configuration that users write through
// the API and that validation checks: plain data with JSON tags compatible
// with singlecloud's API, and the defaults applied before validation.
package model

// Role is a node's job in a cluster.
type Role string

// The node roles (SPEC §3).
const (
	RoleControlPlane Role = "controlplane"
	RoleEtcd         Role = "etcd"
	RoleWorker       Role = "worker"
	RoleEdge         Role = "edge"
)

// Node is one host of a created cluster. Empty per-node settings inherit
// the cluster's (sshUser, sshPort) or zke's defaults.
type Node struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// Host names a registered host (/hosts) this node is: its address,
	// SSH port, user and key are taken from the registry at create or
	// update, and the host cannot be deleted while the cluster uses it.
	Host  string `json:"host,omitempty"`
	Roles []Role `json:"roles"`
	// InternalAddress is the address every component on the node binds
	// to and other nodes reach it on; defaults to Address.
	InternalAddress string `json:"internalAddress,omitempty"`
	SSHPort         Port   `json:"sshPort,omitempty"`
	SSHUser         string `json:"sshUser,omitempty"`
	// DockerSocket is the node's Docker Engine socket
	// (/var/run/docker.sock).
	DockerSocket string `json:"dockerSocket,omitempty"`
	// ContainerdSocket is the CRI endpoint the kubelet uses
	// (/run/containerd/containerd.sock).
	ContainerdSocket string `json:"containerdSocket,omitempty"`
	// PrefixPath prefixes every directory zke writes on the node ("/").
	PrefixPath string            `json:"prefixPath,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Taints     []Taint           `json:"taints,omitempty"`
	// Kubelet overrides component settings on this node only.
	Kubelet KubeletOverrides `json:"kubelet,omitempty"`
}

// Taint is a Kubernetes node taint zke applies at setup.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// The taint effects Kubernetes knows; Taint.Effect is one of them.
const (
	// TaintNoSchedule keeps new pods off the node unless they tolerate it.
	TaintNoSchedule = "NoSchedule"
	// TaintPreferNoSchedule makes the scheduler avoid the node if it can.
	TaintPreferNoSchedule = "PreferNoSchedule"
	// TaintNoExecute also evicts running pods that do not tolerate it.
	TaintNoExecute = "NoExecute"
)

// KubeletOverrides are per-node kubelet settings.
type KubeletOverrides struct {
	// CgroupRoot is the kubelet's cgroupRoot; nodes that share a kernel
	// need distinct ones.
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	// ExtraArgs are extra kubelet flags, name → value (no leading --).
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`
}

// HasRole reports whether n has role r.
func (n Node) HasRole(r Role) bool {
	for _, x := range n.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// Network selects the pod network plugin.
type Network struct {
	Plugin string `json:"plugin"`
	Iface  string `json:"iface,omitempty"`
}

// PrivateRegistry is a registry the nodes pull images from.
type PrivateRegistry struct {
	URL      string `json:"url"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	CACert   string `json:"caCert,omitempty"`
}

// ClusterConfig is the desired configuration of a created cluster (SPEC §3).
// SSHKey and registry passwords are secrets: write-only through the API and
// sealed at rest.
type ClusterConfig struct {
	Name                string            `json:"name"`
	Nodes               []Node            `json:"nodes"`
	SSHUser             string            `json:"sshUser"`
	SSHKey              string            `json:"sshKey,omitempty"`
	SSHPort             Port              `json:"sshPort"`
	SingleCloudAddress  string            `json:"singleCloudAddress"`
	ClusterDomain       string            `json:"clusterDomain"`
	ClusterCIDR         string            `json:"clusterCidr"`
	ServiceCIDR         string            `json:"serviceCidr"`
	ClusterDNSServiceIP string            `json:"clusterDNSServiceIP"`
	ClusterUpstreamDNS  []string          `json:"clusterUpstreamDNS,omitempty"`
	Network             Network           `json:"network"`
	PrivateRegistries   []PrivateRegistry `json:"privateRegistries,omitempty"`
	KubernetesVersion   string            `json:"kubernetesVersion"`
	// Images maps a component (ImageComponents: etcd, kube-apiserver,
	// kube-controller-manager, kube-scheduler, kube-proxy, kubelet,
	// coredns, loadbalancer, and the older kubernetes and pause) to the
	// image reference to run; missing entries come from zke's version
	// table.
	Images map[string]string `json:"images,omitempty"`
	// ImageArchive is a `docker save` archive on the singlecloud server,
	// named relative to the server's image directory (--image-dir), that
	// zke uploads and loads on nodes missing an image. It can never name
	// a file outside that directory.
	ImageArchive string `json:"imageArchive,omitempty"`
	// ImageRepository replaces registry.k8s.io in the default images, as
	// kubeadm's imageRepository does: a mirror registry's host[:port]
	// and path (registry.example.com/k8s). CoreDNS is then looked up as
	// <imageRepository>/coredns, flattened as kubeadm does. Images given
	// in Images are used as they are.
	ImageRepository string `json:"imageRepository,omitempty"`
	// ArtifactMirror is the base address (http or https) of a mirror of
	// the release files zke installs that no image carries (the CNI
	// plugins): a file published at https://host/path is fetched from
	// <artifactMirror>/host/path, with its .sha256 beside it. Empty
	// means singlecloud's --artifact-mirror, else the upstream address.
	ArtifactMirror string `json:"artifactMirror,omitempty"`
	// LoadBalance is kept for the original singlecloud's clients; see
	// LoadBalance.
	LoadBalance *LoadBalance `json:"loadBalance,omitempty"`
	// StepDeadlines overrides, per step (StepNames), how long a step of
	// zke's operations may run before the cluster's operation reports it
	// stalled, as a Go duration ("30m"); steps left out keep zke's
	// defaults. A stalled step is not stopped: it goes on until its own
	// bounded waits give up.
	StepDeadlines map[string]string `json:"stepDeadlines,omitempty"`
	// Certificates tunes how singlecloud looks after the cluster's
	// certificates.
	Certificates *CertificatesConfig `json:"certificates,omitempty"`
	// Snapshots is the schedule of the cluster's etcd snapshots.
	Snapshots *SnapshotsConfig `json:"snapshots,omitempty"`
	// ControlPlaneEndpoint, when set, gives the cluster one API endpoint
	// that survives the loss of any control-plane node.
	ControlPlaneEndpoint *ControlPlaneEndpoint `json:"controlPlaneEndpoint,omitempty"`
	// Upgrade tunes Kubernetes upgrades (a changed kubernetesVersion).
	Upgrade *UpgradeConfig `json:"upgrade,omitempty"`
}

// ImportRequest is the body of POST /clusters?action=import.
type ImportRequest struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
}

// CertificatesConfig is a cluster's certificate policy.
type CertificatesConfig struct {
	// AutoRenew rotates the cluster's leaf certificates on its own once
	// one has 30 days or fewer left (default true).
	AutoRenew *bool `json:"autoRenew,omitempty"`
}

// AutoRenewCertificates reports whether singlecloud renews the cluster's
// leaf certificates on its own: unless the config says otherwise.
func (c *ClusterConfig) AutoRenewCertificates() bool {
	return c == nil || c.Certificates == nil || c.Certificates.AutoRenew == nil || *c.Certificates.AutoRenew
}
