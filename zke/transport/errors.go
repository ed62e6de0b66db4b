package transport

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels, matched with errors.Is. Each is wrapped in a *NodeError that
// names the node and says what to fix.
var (
	// ErrUnreachable: the TCP connection to the node's SSH port failed
	// (refused, timed out, no route, unknown host).
	ErrUnreachable = errors.New("node unreachable")
	// ErrHandshake: the port accepted the connection but the SSH handshake
	// did not complete (timeout, connection closed, no common algorithm).
	ErrHandshake = errors.New("ssh handshake failed")
	// ErrAuthFailed: the node refused the cluster's key for the user.
	ErrAuthFailed = errors.New("ssh authentication failed")
	// ErrHostKeyMismatch: the node presented a host key other than the
	// pinned one. errors.As finds the *HostKeyMismatchError.
	ErrHostKeyMismatch = errors.New("ssh host key mismatch")
	// ErrNoDockerAccess: the Docker socket is missing or the SSH user may
	// not use it.
	ErrNoDockerAccess = errors.New("no access to the docker socket")
	// ErrForward: the node did not open a forwarded connection (nothing
	// listens there, or forwarding is disabled in sshd_config).
	ErrForward = errors.New("connection through the ssh tunnel failed")
	// ErrConnectionLost: the SSH connection ended under an operation
	// (keepalive timed out, node rebooted, network cut).
	ErrConnectionLost = errors.New("ssh connection lost")
	// ErrClosed: the client was closed by its owner.
	ErrClosed = errors.New("ssh client closed")
	// ErrInvalidKey: the private key cannot be used (encrypted, malformed,
	// unsupported).
	ErrInvalidKey = errors.New("invalid ssh private key")
	// ErrInvalidTarget: a Target lacks a required field.
	ErrInvalidTarget = errors.New("invalid ssh target")
)

// NodeError is a failure of one operation on one node. Err is the cause
// (usually wrapping a sentinel above), Hint says in plain words what the
// user should check or change.
type NodeError struct {
	// Node is the node's name, Address its host:port.
	Node, Address string
	// Op is what was attempted: "connect", "exec", "upload /etc/x", ...
	Op string
	// Err is the cause.
	Err error
	// Hint says what to fix; it may be empty.
	Hint string
}

// Error reads "ssh node1 (10.0.0.5:22): connect: <cause>: <hint>".
func (e *NodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ssh %s (%s): %s: %v", e.Node, e.Address, e.Op, e.Err)
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Err }

// ExitError reports a remote command that exited with a non-zero status or
// was killed by a signal.
type ExitError struct {
	// Cmd is the command as given to Exec.
	Cmd string
	// Code is the exit status; -1 when the command was killed by a signal
	// or the server reported no status.
	Code int
	// Signal is the signal that killed the command ("KILL"), if any.
	Signal string
	// Stderr is the tail of the command's standard error, for the message.
	Stderr string
}

// maxErrCmd and maxErrStderr bound what an ExitError's message shows of the
// command and its stderr, so that one error stays one readable line.
const (
	maxErrCmd    = 120
	maxErrStderr = 2048
)

// Error reads `command "docker ps" exited with code 1: <stderr tail>`.
func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "command %q ", shorten(e.Cmd, maxErrCmd))
	if e.Signal != "" {
		fmt.Fprintf(&b, "killed by signal %s", e.Signal)
	} else {
		fmt.Fprintf(&b, "exited with code %d", e.Code)
	}
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	return b.String()
}

// shorten cuts s to at most n bytes, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// tail returns at most the last n bytes of b, as a string.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
