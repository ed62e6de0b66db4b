package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"golang.org/x/crypto/ssh"
)

// This file is the one place where failures of the network and of
// golang.org/x/crypto/ssh enter the package and become typed errors. The
// library reports a refused key only as text; it is inspected here and
// nowhere else.

// authFailureTexts are the messages with which x/crypto/ssh and sshd report
// that no key was accepted.
var authFailureTexts = []string{
	"unable to authenticate",
	"Too many authentication failures",
}

// classifyDial turns a failed TCP connect to t into a *NodeError wrapping
// ErrUnreachable, with a hint for the kind of failure.
func classifyDial(t Target, timeout string, err error) *NodeError {
	ne := &NodeError{Node: t.Node, Address: t.hostPort(), Op: "connect", Err: fmt.Errorf("%w: %w", ErrUnreachable, err)}
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr):
		ne.Hint = fmt.Sprintf("cannot resolve %q: correct the node's address or use an IP address", t.Address)
	case errors.Is(err, syscall.ECONNREFUSED):
		ne.Hint = fmt.Sprintf("nothing accepts connections on port %d of %s: check that sshd runs there and that the node's sshPort is right", t.Port, t.Node)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		ne.Hint = fmt.Sprintf("no route to %s: check that %s is up, that its address is right and the network between singlecloud and the node", t.Address, t.Node)
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		ne.Hint = fmt.Sprintf("no answer within %s: check that %s is up, that its address is right and that no firewall drops port %d", timeout, t.Node, t.Port)
	default:
		ne.Hint = fmt.Sprintf("check that %s is up and reachable on port %d", t.Node, t.Port)
	}
	return ne
}

// classifyHandshake turns a failed SSH handshake on an established
// connection into a typed error. A host key mismatch is returned as the
// *HostKeyMismatchError itself (it names node and address).
func classifyHandshake(t Target, pin *hostKeyPin, timeout string, err error) error {
	var mismatch *HostKeyMismatchError
	if errors.As(err, &mismatch) {
		return mismatch
	}
	if m := pin.mismatchFromNegotiation(err); m != nil {
		return m
	}
	ne := &NodeError{Node: t.Node, Address: t.hostPort(), Op: "connect"}
	msg := err.Error()
	for _, text := range authFailureTexts {
		if strings.Contains(msg, text) {
			ne.Err = fmt.Errorf("%w for user %s (publickey)", ErrAuthFailed, t.User)
			ne.Hint = fmt.Sprintf("add the cluster's public key to ~%s/.ssh/authorized_keys on %s, and check that sshd lets %s log in with a key", t.User, t.Node, t.User)
			return ne
		}
	}
	ne.Err = fmt.Errorf("%w: %w", ErrHandshake, err)
	var netErr net.Error
	var neg *ssh.AlgorithmNegotiationError
	switch {
	case errors.As(err, &neg):
		ne.Hint = fmt.Sprintf("the SSH server of %s and singlecloud share no %s algorithm: enable a modern one in sshd_config", t.Node, neg.What)
		return ne
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		ne.Hint = fmt.Sprintf("port %d of %s accepted the connection but SSH did not complete within %s: check that sshd (not another service) listens there and that the node is not overloaded", t.Port, t.Node, timeout)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		ne.Hint = fmt.Sprintf("%s closed the connection during the SSH handshake: check sshd's log on the node (MaxStartups, AllowUsers, tcp wrappers)", t.Node)
	default:
		ne.Hint = fmt.Sprintf("check sshd on %s and its log", t.Node)
	}
	return ne
}

// ctxError wraps a context's error for node t, so that both
// errors.Is(err, context.Canceled) and the node's name are there.
func ctxError(t Target, op string, ctx context.Context, cause error) error {
	err := ctx.Err()
	if cause != nil {
		err = errors.Join(err, cause)
	}
	return &NodeError{Node: t.Node, Address: t.hostPort(), Op: op, Err: err}
}

// retryable reports whether another connection attempt may succeed: the
// node was unreachable or the handshake broke off, but not when the two
// sides share no algorithm.
func retryable(err error) bool {
	var neg *ssh.AlgorithmNegotiationError
	return errors.Is(err, ErrUnreachable) || (errors.Is(err, ErrHandshake) && !errors.As(err, &neg))
}
