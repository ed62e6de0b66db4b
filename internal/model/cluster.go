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

// Node is one host of a created cluster.
type Node struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Roles   []Role `json:"roles"`
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
	SSHPort             int               `json:"sshPort"`
	SingleCloudAddress  string            `json:"singleCloudAddress"`
	ClusterDomain       string            `json:"clusterDomain"`
	ClusterCIDR         string            `json:"clusterCidr"`
	ServiceCIDR         string            `json:"serviceCidr"`
	ClusterDNSServiceIP string            `json:"clusterDNSServiceIP"`
	ClusterUpstreamDNS  []string          `json:"clusterUpstreamDNS,omitempty"`
	Network             Network           `json:"network"`
	PrivateRegistries   []PrivateRegistry `json:"privateRegistries,omitempty"`
	KubernetesVersion   string            `json:"kubernetesVersion"`
}

// ImportRequest is the body of POST /clusters?action=import.
type ImportRequest struct {
	Name       string `json:"name"`
	Kubeconfig string `json:"kubeconfig"`
}
