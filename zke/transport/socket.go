package transport

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// probeTimeout bounds a socket probe: one short command.
const probeTimeout = 5 * time.Second

// socketState is what a probe found at a socket path on the node.
type socketState string

const (
	socketOK        socketState = "ok"
	socketMissing   socketState = "missing"
	socketNotSocket socketState = "notsocket"
	socketDenied    socketState = "denied"
)

// probeScript prints the socketState of the path $1, as seen by the SSH
// user (test -r/-w honour the user's groups).
const probeScript = `if [ ! -e "$1" ]; then echo missing; elif [ ! -S "$1" ]; then echo notsocket; ` +
	`elif [ -r "$1" ] && [ -w "$1" ]; then echo ok; else echo denied; fi`

// probeSocket looks at the socket at path on the node, within ctx and
// probeTimeout.
func (c *Client) probeSocket(ctx context.Context, path string) (socketState, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	res, err := c.Exec(ctx, "sh -c "+shellQuote(probeScript)+" probe "+shellQuote(path), ExecOptions{})
	if err != nil {
		return "", err
	}
	switch s := socketState(strings.TrimSpace(string(res.Stdout))); s {
	case socketOK, socketMissing, socketNotSocket, socketDenied:
		return s, nil
	default:
		return "", fmt.Errorf("socket probe of %s printed %q", path, shorten(string(s), 80))
	}
}

// hint says what to do about a socket in state s; service names what
// should be running behind it.
func (s socketState) hint(t Target, path, service string) string {
	switch s {
	case socketMissing:
		return fmt.Sprintf("%s does not exist on %s: start %s, or correct the socket path in the node's config", path, t.Node, service)
	case socketNotSocket:
		return fmt.Sprintf("%s on %s is not a socket: correct the socket path in the node's config", path, t.Node)
	case socketDenied:
		return fmt.Sprintf("user %s may not use %s on %s: add %s to the group that owns it, or connect as root", t.User, path, t.Node, t.User)
	default:
		return fmt.Sprintf("%s on %s exists but nothing accepts connections on it: restart %s", path, t.Node, service)
	}
}

// CheckDockerAccess checks that the SSH user can use the Docker socket at
// path on the node (/var/run/docker.sock by default). It returns nil, or a
// *NodeError wrapping ErrNoDockerAccess whose hint says to start Docker,
// to fix the path, or to add the user to the docker group. It does not
// check that the daemon answers; a request through DialContext does.
func (c *Client) CheckDockerAccess(ctx context.Context, path string) error {
	op := "check docker socket " + path
	state, err := c.probeSocket(ctx, path)
	if err != nil {
		return err
	}
	switch state {
	case socketOK:
		return nil
	case socketDenied:
		return c.nodeError(op, fmt.Errorf("%w: permission denied on %s for user %s", ErrNoDockerAccess, path, c.target.User),
			fmt.Sprintf("add user %s to the docker group on %s (usermod -aG docker %s), or connect as root", c.target.User, c.target.Node, c.target.User))
	default:
		return c.nodeError(op, ErrNoDockerAccess, state.hint(c.target, path, "Docker (systemctl start docker)"))
	}
}
