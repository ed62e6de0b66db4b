package pki

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

const (
	// CAValidity is how long a new certificate authority is valid. Long,
	// because this package never rotates a CA: rotating one means
	// redistributing every certificate and restarting every component.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is how long a new leaf certificate is valid; any Ensure
	// run in its last RenewBefore reissues it.
	LeafValidity = 365 * 24 * time.Hour
	// RenewBefore is how close to its expiry a leaf is reissued, leaving a
	// month for an update or a retry to happen before anything breaks.
	RenewBefore = 30 * 24 * time.Hour
	// Backdate moves every NotBefore into the past so that a certificate
	// issued here is already valid on a node whose clock is a little behind
	// singlecloud's (preflight bounds the skew well below this).
	Backdate = time.Hour
)

// Node is one host of the cluster as far as certificates are concerned.
type Node struct {
	// Name is the node's Kubernetes name; it is in the node's SANs and in
	// its kubelet identity system:node:<Name>.
	Name string
	// Address is how singlecloud and other nodes reach the node.
	Address string
	// InternalAddress is the address components bind to; "" means Address.
	InternalAddress string
	// Roles decide which certificates the node gets.
	Roles []model.Role
}

// HasRole reports whether n has role r.
func (n Node) HasRole(r model.Role) bool { return slices.Contains(n.Roles, r) }

// Input is the desired PKI of one cluster: everything the subjects and SANs
// of its certificates depend on.
type Input struct {
	// ClusterName names the cluster in the CA subjects and kubeconfigs.
	ClusterName string
	// ClusterDomain is the cluster's DNS domain (like cluster.local), for
	// the apiserver SAN kubernetes.default.svc.<ClusterDomain>.
	ClusterDomain string
	// ServiceCIDR is the service network; its first address is the
	// kubernetes service's ClusterIP and so an apiserver SAN.
	ServiceCIDR string
	// Nodes is every node of the cluster.
	Nodes []Node
	// ExtraSANs are more names or IPs for the apiserver certificate, such
	// as a load balancer in front of the controlplane.
	ExtraSANs []string
	// Now is the clock; nil means time.Now. Tests inject a fixed clock.
	Now func() time.Time
	// CAValidity and LeafValidity override the constants of the same name
	// for new certificates; zero means the constant.
	CAValidity   time.Duration
	LeafValidity time.Duration
	// AdminUser is the user of the administrator's certificate
	// (KindAdmin); "" means AdminCN. A new user reissues it.
	AdminUser string
	// ReissueIssuedBefore, when set, reissues every leaf issued before
	// it (a rotation): the CAs and the service-account key stay.
	ReissueIssuedBefore time.Time
}

// normalize returns a copy of in with defaults filled (InternalAddress,
// Now, validities) and the first service IP computed, or every violation
// joined, each wrapping ErrInvalidInput.
func (in Input) normalize() (Input, netip.Addr, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidInput}, args...)...))
	}
	if in.ClusterName == "" {
		bad("cluster name is empty; set the cluster's name")
	}
	if in.ClusterDomain == "" {
		bad("clusterDomain is empty; set it, for example to cluster.local")
	}
	var serviceIP netip.Addr
	if prefix, err := netip.ParsePrefix(in.ServiceCIDR); err != nil {
		bad("serviceCIDR %q is not a CIDR like 10.43.0.0/16: %v", in.ServiceCIDR, err)
	} else if serviceIP = prefix.Masked().Addr().Next(); !serviceIP.IsValid() || !prefix.Contains(serviceIP) {
		bad("serviceCIDR %q has no room for the kubernetes service IP; use a larger network", in.ServiceCIDR)
	}
	nodes := make([]Node, len(in.Nodes))
	seen := make(map[string]bool, len(in.Nodes))
	for i, n := range in.Nodes {
		switch {
		case n.Name == "":
			bad("nodes[%d]: name is empty; give every node a name", i)
		case seen[n.Name]:
			bad("nodes[%d]: name %q is used twice; node names must be unique", i, n.Name)
		}
		seen[n.Name] = true
		if n.Address == "" {
			bad("node %q: address is empty; set the address singlecloud reaches it on", n.Name)
		}
		if n.InternalAddress == "" {
			n.InternalAddress = n.Address
		}
		n.Roles = slices.Clone(n.Roles)
		nodes[i] = n
	}
	for _, r := range []model.Role{model.RoleControlPlane, model.RoleEtcd} {
		if !slices.ContainsFunc(nodes, func(n Node) bool { return n.HasRole(r) }) {
			bad("no %s node; give at least one node the role %s", r, r)
		}
	}
	for i, san := range in.ExtraSANs {
		if san == "" {
			bad("extra SAN %d is empty; remove it or give a name or IP", i)
		}
	}
	if in.CAValidity < 0 || in.LeafValidity < 0 {
		bad("certificate validity is negative; leave it 0 for the defaults")
	}
	if len(errs) > 0 {
		return Input{}, netip.Addr{}, errors.Join(errs...)
	}
	in.Nodes = nodes
	in.ExtraSANs = slices.Clone(in.ExtraSANs)
	if in.Now == nil {
		in.Now = time.Now
	}
	if in.AdminUser == "" {
		in.AdminUser = AdminCN
	}
	if in.CAValidity == 0 {
		in.CAValidity = CAValidity
	}
	if in.LeafValidity == 0 {
		in.LeafValidity = LeafValidity
	}
	return in, serviceIP, nil
}
