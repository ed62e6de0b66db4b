package clustermanager

import (
	"bytes"
	"fmt"
	"net/netip"
	"sort"

	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

// HostDirectory resolves the registered hosts (the host manager) that a
// cluster's nodes may name instead of repeating their address and key.
type HostDirectory interface {
	// Resolve returns the registration of host name, with its key.
	Resolve(name string) (model.HostSpec, error)
}

// resolveHosts fills every node that names a registered host from the
// registry: its address (a given one must match), SSH port and user when
// not given, and the cluster's key when not given. zke logs in to every
// node of a cluster with one key, so the named hosts must share it.
func (m *Manager) resolveHosts(cfg *model.ClusterConfig) error {
	var errs validation.Errors
	key, keyFrom := "", ""
	for i := range cfg.Nodes {
		n := &cfg.Nodes[i]
		if n.Host == "" {
			continue
		}
		field := fmt.Sprintf("nodes[%d].host", i)
		if m.opts.Hosts == nil {
			errs = append(errs, validation.FieldError{Field: field, Reason: "this singlecloud has no host registry; give the node's address"})
			continue
		}
		h, err := m.opts.Hosts.Resolve(n.Host)
		if err != nil {
			errs = append(errs, validation.FieldError{Field: field, Reason: fmt.Sprintf("%q is not a registered host: register it (POST /hosts) or give the node's address", n.Host)})
			continue
		}
		switch {
		case n.Address == "":
			n.Address = h.Address
		case !sameAddress(n.Address, h.Address):
			errs = append(errs, validation.FieldError{Field: fmt.Sprintf("nodes[%d].address", i),
				Reason: fmt.Sprintf("%s is not the address host %s is registered with (%s); leave it out", n.Address, n.Host, h.Address)})
		}
		if n.Name == "" {
			n.Name = h.Name
		}
		if n.SSHPort == 0 {
			n.SSHPort = model.Port(h.Port)
		}
		if n.SSHUser == "" {
			n.SSHUser = h.User
		}
		switch {
		case key == "":
			key, keyFrom = h.SSHKey, n.Host
		case !sameKey(key, h.SSHKey):
			errs = append(errs, validation.FieldError{Field: field, Reason: fmt.Sprintf("host %s is registered with another SSH key than host %s: zke logs in to every node of a cluster with one key; register them with the same key", n.Host, keyFrom)})
		}
	}
	switch {
	case key == "" || len(errs) > 0:
	case cfg.SSHKey == "":
		cfg.SSHKey = key
	case !sameKey(cfg.SSHKey, key):
		errs = append(errs, validation.FieldError{Field: "sshKey", Reason: fmt.Sprintf("the cluster's key (given, or stored when left out) is not the key host %s is registered with: zke logs in to every node with one key; register the hosts with the cluster's key", keyFrom)})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// sameAddress reports whether two IP addresses are the same, however
// spelled.
func sameAddress(a, b string) bool {
	pa, errA := netip.ParseAddr(a)
	pb, errB := netip.ParseAddr(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa.Unmap() == pb.Unmap()
}

// sameKey reports whether two private keys (PEM) are the same key, by
// their public halves; unreadable ones compare as text.
func sameKey(a, b string) bool {
	sa, errA := ssh.ParsePrivateKey([]byte(a))
	sb, errB := ssh.ParsePrivateKey([]byte(b))
	if errA != nil || errB != nil {
		return a == b
	}
	return bytes.Equal(sa.PublicKey().Marshal(), sb.PublicKey().Marshal())
}

// ClustersUsingHost names the clusters whose nodes name the registered
// host, sorted: the host manager refuses to forget a host in use. A
// cluster whose create has reserved its name but not started yet counts.
func (m *Manager) ClustersUsingHost(host string) []string {
	m.mu.RLock()
	entries := make([]*entry, 0, len(m.all))
	for _, e := range m.all {
		entries = append(entries, e)
	}
	m.mu.RUnlock()
	var out []string
	for _, e := range entries {
		if cfg := e.record().Config; cfg != nil {
			for _, n := range cfg.Nodes {
				if n.Host == host {
					out = append(out, e.name)
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// recheckHosts resolves cfg's named hosts again once the cluster's name is
// reserved: a host deleted between the first resolve and the reservation
// is caught here (hosts.Manager.Delete says why this closes the gap).
func (m *Manager) recheckHosts(cfg model.ClusterConfig) error {
	var errs validation.Errors
	for i, n := range cfg.Nodes {
		if n.Host == "" || m.opts.Hosts == nil {
			continue
		}
		if _, err := m.opts.Hosts.Resolve(n.Host); err != nil {
			errs = append(errs, validation.FieldError{Field: fmt.Sprintf("nodes[%d].host", i), Reason: fmt.Sprintf("host %q was deleted while the cluster was being created; register it again or give the node's address", n.Host)})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
