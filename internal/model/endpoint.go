package model

import (
	"net"
	"strconv"
)

// ControlPlaneEndpoint is a cluster's shared API endpoint: a virtual IP
// that keepalived (VRRP) keeps on one healthy control-plane node, in front
// of an haproxy on every control-plane node that spreads connections over
// every kube-apiserver that answers. Kubelets, kube-proxies, controller
// managers, schedulers and the admin kubeconfig singlecloud serves all use
// it, so that losing, stopping or removing any one control-plane node
// leaves the API answering.
type ControlPlaneEndpoint struct {
	// VIP is an unused IPv4 address of the control-plane nodes' network
	// (the network of their internal addresses), reachable from the
	// singlecloud server.
	VIP string `json:"vip"`
}

// APIEndpointPort is the port of the shared endpoint: haproxy listens on
// it on every control-plane node, beside kube-apiserver's 6443.
const APIEndpointPort = 8443

// SharedEndpoint returns the cluster's shared API endpoint as host:port,
// or "" when it has none.
func (c *ClusterConfig) SharedEndpoint() string {
	if c == nil || c.ControlPlaneEndpoint == nil || c.ControlPlaneEndpoint.VIP == "" {
		return ""
	}
	return net.JoinHostPort(c.ControlPlaneEndpoint.VIP, strconv.Itoa(APIEndpointPort))
}
