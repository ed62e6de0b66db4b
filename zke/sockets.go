package zke

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// socketState is what the node says is at a configured socket path.
type socketState string

const (
	socketIsSocket socketState = "socket"
	socketMissing  socketState = "missing"
	socketOther    socketState = "notsocket" // exists, but is no socket
)

// nodeSocket is a socket path of a node's config as the node resolves it.
type nodeSocket struct {
	// Configured is the path in the node's config; Resolved the same
	// path with every symlink followed on the node (readlink -f; equal
	// to Configured when nothing is a symlink, empty when a directory on
	// the way does not exist).
	Configured, Resolved string
	State                socketState
}

// resolveSocketScript prints, for the path p, what is there (socket,
// missing, notsocket) and p with every symlink followed, one per line.
func resolveSocketScript(p string) string {
	return `p=` + shellQuote(p) + `
r=$(readlink -f "$p" 2>/dev/null) || r=
if [ -S "$p" ]; then echo socket; elif [ -e "$p" ]; then echo notsocket; else echo missing; fi
printf '%s\n' "$r"`
}

// parseResolvedSocket reads resolveSocketScript's output for configured.
func parseResolvedSocket(configured, out string) (nodeSocket, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	s := nodeSocket{Configured: configured, State: socketState(strings.TrimSpace(lines[0]))}
	switch s.State {
	case socketIsSocket, socketMissing, socketOther:
	default:
		return nodeSocket{}, fmt.Errorf("resolve %s: unexpected answer %q", configured, lines[0])
	}
	if len(lines) > 1 {
		r := strings.TrimSpace(lines[1])
		if path.IsAbs(r) {
			s.Resolved = path.Clean(r)
		}
	}
	return s, nil
}

// resolveSocket asks n where the socket path p leads, following symlinks
// on the node: a socket reached through a symlink lives where the link
// points, and a container that is to use it needs that directory too.
func (r *run) resolveSocket(ctx context.Context, n node, p string) (nodeSocket, error) {
	c, err := r.client(n)
	if err != nil {
		return nodeSocket{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	res, err := c.Exec(ctx, resolveSocketScript(p), transport.ExecOptions{})
	if err != nil {
		return nodeSocket{}, nodeErr(n, fmt.Errorf("resolve socket %s: %w", p, err), "")
	}
	s, err := parseResolvedSocket(p, string(res.Stdout))
	if err != nil {
		return nodeSocket{}, nodeErr(n, err, "")
	}
	return s, nil
}

// socketBinds are the binds, each at the same path, that make the socket
// s usable in a container whose bind targets are covered: the directory
// of the configured path (so that the path in the kubelet's config, a
// symlink maybe, exists in the container) and the directory of the
// resolved path (where the link leads). Directories are bound rather
// than the socket file, so that a runtime restarting (and recreating its
// socket) is seen by the container. A directory already inside a bind is
// left out; a socket directly in / is bound as a file, since binding /
// over the container's root is not possible. A link through an
// intermediate symlink in a third directory is not followed hop by hop.
func socketBinds(s nodeSocket, covered []string) []string {
	under := func(p string, dirs []string) bool {
		for _, d := range dirs {
			if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
	var srcs []string
	for _, p := range []string{s.Configured, s.Resolved} {
		if !path.IsAbs(p) {
			continue
		}
		p = path.Clean(p)
		d := path.Dir(p)
		if d == "/" {
			d = p
		}
		if !under(d, covered) && !slices.Contains(srcs, d) {
			srcs = append(srcs, d)
		}
	}
	slices.Sort(srcs)
	var out []string
	for i, d := range srcs {
		if under(d, srcs[:i]) {
			continue // inside another directory bound here
		}
		out = append(out, d+":"+d)
	}
	return out
}

// bindTargets are the container paths of binds (malformed ones skipped:
// Ensure reports them).
func bindTargets(binds []string) []string {
	out := make([]string, 0, len(binds))
	for _, b := range binds {
		if pb, err := runtime.ParseBind(b); err == nil {
			out = append(out, pb.Target)
		}
	}
	return out
}

// nodeField is the config path of field of node n, as validation spells
// it ("nodes[2].containerdSocket"), so that a hint says what to set.
func (r *run) nodeField(n node, field string) string {
	for i, cn := range r.cfg.Nodes {
		if cn.Name == n.Name {
			return fmt.Sprintf("nodes[%d].%s", i, field)
		}
	}
	return "nodes[].name=" + n.Name + "." + field
}
