package transport

import (
	"context"
	"errors"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"
)

// DialContext opens a connection from the node to addr, through the SSH
// connection. network "tcp", "tcp4" or "tcp6" opens a direct-tcpip channel
// to addr ("127.0.0.1:2379", resolved by the node); "unix" opens a
// direct-streamlocal@openssh.com channel to the socket at path addr on the
// node ("/var/run/docker.sock"). It has the signature of
// net.Dialer.DialContext, for http.Transport.
//
// ctx bounds the opening only. The returned conn does not support
// deadlines (SSH channels have none): close it to end a blocked Read; it
// also ends when the client closes. A refusal is a *NodeError wrapping
// ErrForward whose hint says why (nothing listening, socket missing or not
// accessible, forwarding disabled in sshd_config).
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	op := fmt.Sprintf("dial %s %s from the node", network, addr)
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return nil, c.nodeError(op, fmt.Errorf("network %q: only tcp and unix can be reached through ssh", network), "")
	}
	if err := ctx.Err(); err != nil {
		return nil, c.nodeError(op, err, "")
	}
	type dialed struct {
		conn net.Conn
		err  error
	}
	ch := make(chan dialed)
	if !c.spawn(func() {
		conn, err := c.conn.Dial(network, addr)
		select {
		case ch <- dialed{conn, err}:
		case <-ctx.Done():
			if conn != nil {
				conn.Close()
			}
		}
	}) {
		return nil, c.closedError(op)
	}
	select {
	case <-ctx.Done():
		return nil, c.nodeError(op, ctx.Err(), "")
	case d := <-ch:
		if d.err != nil {
			return nil, c.forwardError(ctx, op, network, addr, d.err)
		}
		return d.conn, nil
	}
}

// forwardError explains a channel the node would not open. For a unix
// socket it looks at the socket on the node to say what is wrong with it.
func (c *Client) forwardError(ctx context.Context, op, network, addr string, err error) error {
	var open *ssh.OpenChannelError
	if !errors.As(err, &open) {
		select {
		case <-c.done:
			return c.closedError(op)
		default:
		}
		return c.nodeError(op, err, "")
	}
	err = fmt.Errorf("%w: %w", ErrForward, err)
	if open.Reason == ssh.Prohibited {
		option := "AllowTcpForwarding"
		if network == "unix" {
			option = "AllowStreamLocalForwarding"
		}
		return c.nodeError(op, err, fmt.Sprintf("sshd on %s forbids forwarding: set %s yes in its sshd_config", c.target.Node, option))
	}
	if network != "unix" {
		return c.nodeError(op, err, fmt.Sprintf("nothing accepts connections on %s on %s: check that the service runs and listens there", addr, c.target.Node))
	}
	state, perr := c.probeSocket(ctx, addr)
	if perr != nil {
		return c.nodeError(op, err, fmt.Sprintf("check that the socket %s exists on %s and that user %s may use it", addr, c.target.Node, c.target.User))
	}
	return c.nodeError(op, err, state.hint(c.target, addr, "the service that owns it"))
}
