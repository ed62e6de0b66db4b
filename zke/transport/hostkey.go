package transport

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// HostKeyMismatchError reports a node whose host key is not the pinned one:
// the node was reinstalled or its keys regenerated — or someone is in the
// middle. Want and Got are SHA256 fingerprints ("SHA256:...").
type HostKeyMismatchError struct {
	Node, Address string
	Want, Got     string
}

// Error says what was expected, what was found, and how to check and reset
// the pin.
func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("ssh %s (%s): host key mismatch: the cluster state pins %s but the node presented %s: "+
		"if %s was reinstalled or its host keys regenerated, compare %s with the output of "+
		"`ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub` run on the node itself, then have singlecloud forget the node's "+
		"pinned host key (the cluster's forgetHostKey action) so that the next connection records the new one, and retry; otherwise do not connect: "+
		"the connection may be intercepted", e.Node, e.Address, e.Want, e.Got, e.Node, e.Got)
}

// Is makes errors.Is(err, ErrHostKeyMismatch) true.
func (e *HostKeyMismatchError) Is(target error) bool { return target == ErrHostKeyMismatch }

// FormatHostKey returns key in authorized_keys format without a trailing
// newline, the form Target.HostKey takes.
func FormatHostKey(key ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
}

// ParseHostKey parses a pinned host key in authorized_keys format.
func ParseHostKey(s string) (ssh.PublicKey, error) {
	key, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("pinned host key is not in authorized_keys format (\"ssh-ed25519 AAAA...\"): %w", err)
	}
	return key, nil
}

// hostKeyPin checks the key a node presents during the handshake against
// the pin and remembers the key it accepted.
type hostKeyPin struct {
	node, address string
	want          ssh.PublicKey // nil: trust on first use

	mu  sync.Mutex
	got ssh.PublicKey
}

// newHostKeyPin parses t.HostKey; an unparsable pin names the node.
func newHostKeyPin(t Target) (*hostKeyPin, error) {
	p := &hostKeyPin{node: t.Node, address: t.hostPort()}
	if strings.TrimSpace(t.HostKey) != "" {
		key, err := ParseHostKey(t.HostKey)
		if err != nil {
			return nil, fmt.Errorf("%w: node %s: %w", ErrInvalidTarget, t.Node, err)
		}
		p.want = key
	}
	return p, nil
}

// check is the ssh.HostKeyCallback.
func (p *hostKeyPin) check(_ string, _ net.Addr, key ssh.PublicKey) error {
	if p.want != nil && !bytes.Equal(key.Marshal(), p.want.Marshal()) {
		return &HostKeyMismatchError{
			Node: p.node, Address: p.address,
			Want: ssh.FingerprintSHA256(p.want), Got: ssh.FingerprintSHA256(key),
		}
	}
	p.mu.Lock()
	p.got = key
	p.mu.Unlock()
	return nil
}

// accepted returns the key check accepted, or nil.
func (p *hostKeyPin) accepted() ssh.PublicKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.got
}

// algorithms are the host key algorithms to offer: with a pin, only those
// that the pinned key can sign with, so that a node with several host keys
// presents the pinned one; without a pin, the library's defaults (nil).
func (p *hostKeyPin) algorithms() []string {
	if p.want == nil {
		return nil
	}
	if p.want.Type() == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{p.want.Type()}
}

// mismatchFromNegotiation turns a failed host key algorithm negotiation
// under a pin into a mismatch: the node no longer has a key of the pinned
// type. It returns nil for any other error.
func (p *hostKeyPin) mismatchFromNegotiation(err error) error {
	var neg *ssh.AlgorithmNegotiationError
	if p.want == nil || !errors.As(err, &neg) || neg.What != "host key" {
		return nil
	}
	return &HostKeyMismatchError{
		Node: p.node, Address: p.address,
		Want: ssh.FingerprintSHA256(p.want),
		Got:  "no key of type " + p.want.Type() + " (it offers " + strings.Join(neg.RequestedAlgorithms, ", ") + ")",
	}
}
