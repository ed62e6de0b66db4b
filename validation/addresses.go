package validation

import (
	"errors"
	"net/netip"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// AllowLinkLocalFlag is the server flag (env
// SINGLECLOUD_ALLOW_LINK_LOCAL_HOSTS=true) that lets hosts and nodes have
// the addresses AddressPolicy refuses; refusals name it.
const AllowLinkLocalFlag = "--allow-link-local-hosts"

// metadataAddresses are cloud metadata services outside 169.254.0.0/16:
// AWS's over IPv6, and Alibaba Cloud's. Their answers carry the
// instance's credentials, so singlecloud must not be pointed at them.
var metadataAddresses = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("100.100.100.200"),
}

// AddressPolicy says which addresses singlecloud dials over SSH for hosts
// and cluster nodes. By default link-local addresses (169.254.0.0/16, where
// cloud metadata services answer, and fe80::/10, in their IPv4-mapped forms
// too) and the other metadata addresses are refused: an admin's typo or a
// copied request must not have singlecloud probe the machine it runs on.
// The server passes its policy to the managers that validate addresses;
// the zero value refuses them.
type AddressPolicy struct {
	// AllowLinkLocal accepts those addresses (AllowLinkLocalFlag).
	AllowLinkLocal bool
}

// CheckHost adds to err (nil or the Errors of ValidateHost) a violation at
// "address" when addr is refused. stored is the host's registered address
// ("" for a new host): an address registered before the policy changed is
// kept, so that the host can still be edited.
func (p AddressPolicy) CheckHost(err error, addr, stored string) error {
	if sameAddress(addr, stored) {
		return err
	}
	return p.check(err, map[string]string{"address": addr}, []string{"address"}, "host")
}

// CheckNodes adds to err (nil or the Errors of ValidateCreate or
// ValidateUpdate) a violation at nodes[i].address for each node whose
// address is refused and was not already one of old's nodes (nil for a
// new cluster), so that an existing cluster stays editable.
func (p AddressPolicy) CheckNodes(err error, nodes, old []model.Node) error {
	addrs := map[string]string{}
	var order []string
	for i, n := range nodes {
		if n.Address != "" && !containsAddress(old, n.Address) {
			field := index("nodes", i) + ".address"
			addrs[field] = n.Address
			order = append(order, field)
		}
	}
	return p.check(err, addrs, order, "node")
}

// check adds a violation to err for each refused address of addrs
// (field → address), in the order of fields. An err that is not Errors
// is returned as is, and so are Errors already at MaxReported.
func (p AddressPolicy) check(err error, addrs map[string]string, fields []string, what string) error {
	if p.AllowLinkLocal {
		return err
	}
	var c collector
	if err != nil {
		if !errors.As(err, &c.errs) || len(c.errs) >= MaxReported {
			return err
		}
	}
	for _, f := range fields {
		ip, ok := parseIP(addrs[f])
		if !ok || !refusedAddress(ip) {
			continue
		}
		c.addf(f, "%s is a link-local or cloud metadata address, which singlecloud does not dial by default; give the %s's routable IP, or start singlecloud with %s (SINGLECLOUD_ALLOW_LINK_LOCAL_HOSTS=true) if the %s is really reached there",
			ip, what, AllowLinkLocalFlag, what)
	}
	return c.err()
}

// refusedAddress reports whether ip (unmapped, as parseIP returns it) is
// link-local or a metadata address.
func refusedAddress(ip netip.Addr) bool {
	if ip.IsLinkLocalUnicast() {
		return true
	}
	for _, m := range metadataAddresses {
		if ip == m {
			return true
		}
	}
	return false
}

// containsAddress reports whether one of nodes has addr.
func containsAddress(nodes []model.Node, addr string) bool {
	for _, n := range nodes {
		if sameAddress(n.Address, addr) {
			return true
		}
	}
	return false
}
