package zke

import (
	"fmt"
	"net/netip"
	"path"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Where zke keeps things on a node, under the node's prefixPath.
const (
	dirKubernetes = "/etc/kubernetes"
	dirSSL        = "/etc/kubernetes/ssl"
	dirEtcdData   = "/var/lib/etcd"
	dirKubelet    = "/var/lib/kubelet"
	dirPodLogs    = "/var/log/pods"
	dirContainers = "/var/log/containers"
	// cniConfFile is the pod network config of the bridge plugin where
	// containerd reads it by default. It is the one file zke writes
	// outside the prefix, in the directory the node's containerd reads
	// CNI configs from (cniConfPath, preflight_cni.go).
	cniConfFile = defaultCNIConfDir + "/" + cniConfName
)

// Component ports, bound to the node's internal address (etcd and the
// API server) or to 127.0.0.1 (controller manager, scheduler).
const (
	portEtcdClient        = 2379
	portEtcdPeer          = 2380
	portAPIServer         = 6443
	portKubelet           = 10250
	portControllerManager = 10257
	portScheduler         = 10259
)

// node is a cluster node with every per-node default filled in.
type node struct {
	model.Node
}

// dir returns p under the node's prefix.
func (n node) dir(p string) string { return path.Join(n.PrefixPath, p) }

// nodesOf resolves the per-node settings of cfg (SPEC §3, issue 4): empty
// values inherit the cluster's or zke's defaults.
func nodesOf(cfg model.ClusterConfig) []node {
	out := make([]node, 0, len(cfg.Nodes))
	for _, n := range cfg.Nodes {
		if n.InternalAddress == "" {
			n.InternalAddress = n.Address
		}
		if n.SSHPort == 0 {
			n.SSHPort = cfg.SSHPort
		}
		if n.SSHPort == 0 {
			n.SSHPort = model.DefaultSSHPort
		}
		if n.SSHUser == "" {
			n.SSHUser = cfg.SSHUser
		}
		if n.DockerSocket == "" {
			n.DockerSocket = "/var/run/docker.sock"
		}
		if n.ContainerdSocket == "" {
			n.ContainerdSocket = "/run/containerd/containerd.sock"
		}
		if n.PrefixPath == "" {
			n.PrefixPath = "/"
		}
		out = append(out, node{Node: n})
	}
	return out
}

// withRole returns the nodes that have role r, in config order.
func withRole(nodes []node, r model.Role) []node {
	var out []node
	for _, n := range nodes {
		if n.HasRole(r) {
			out = append(out, n)
		}
	}
	return out
}

// firstServiceIP is the ClusterIP of the kubernetes service: the first
// address of the service CIDR.
func firstServiceIP(serviceCIDR string) (string, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return "", fmt.Errorf("serviceCidr %q: %w", serviceCIDR, err)
	}
	return p.Masked().Addr().Next().String(), nil
}
