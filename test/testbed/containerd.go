package testbed

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// containerdConfig is a host's containerd configuration. Everything lives
// under the host's directory; the socket is at the default path inside the
// host (/run is the host's own) unless HostOptions.ContainerdSockets moved
// it. The CRI plugin must restrict
// oom_score_adj: CAP_SYS_RESOURCE is missing from every bounding set on the
// testbed's VM, and without the restriction every pod sandbox fails with an
// opaque runc error. The sandbox image is the testbed's pause image, which
// is loaded, never pulled.
const containerdConfig = `version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "%[3]s"

[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[2]s"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "%[1]s/runc"
        SystemdCgroup = false
`

// startContainerd starts the host's containerd (containerd 2 on hosts of
// HostOptions.Containerd2) and waits for its socket.
func (g *hostGroup) startContainerd(ctx context.Context, h *Host) error {
	if h.Containerd2 {
		return g.startContainerd2(ctx, h)
	}
	dir := filepath.Join(h.Dir, "containerd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create containerd directory: %w", err)
	}
	config := filepath.Join(dir, "config.toml")
	conf := fmt.Appendf(nil, containerdConfig, h.Dir, PauseImage, h.ContainerdSocketPath)
	if err := os.WriteFile(config, conf, 0o644); err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	p, err := h.startDaemon("containerd", "containerd", "--config", config)
	if err != nil {
		return err
	}
	h.ContainerdSocket = h.sock.outside(h.Dir)
	if err := waitSocket(ctx, p, h.ContainerdSocket); err != nil {
		return fmt.Errorf("%w: containerd: %w", ErrNotReady, err)
	}
	return nil
}

// waitSocket waits until a unix socket accepts connections or its daemon
// exits.
func waitSocket(ctx context.Context, p *process, socket string) error {
	var d net.Dialer
	return poll(ctx, func(ctx context.Context) error {
		if p.exited() {
			return p.exitError()
		}
		conn, err := d.DialContext(ctx, "unix", socket)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// defaultContainerdSocket is containerd's stock socket path.
const defaultContainerdSocket = "/run/containerd/containerd.sock"

// ContainerdSocket places a host's containerd socket outside /run, as some
// distributions and custom installs do, so that tests see what a kubelet
// in a container needs on such hosts.
type ContainerdSocket struct {
	// Path is where containerd listens inside the host: an absolute path
	// outside /run. Its directory is the host's own (a bind mount of
	// Dir/sock), so hosts do not share it; pick one under /var or /etc
	// (the host's copy-on-write layers) to leave nothing on the machine.
	Path string
	// Link makes /run/containerd/containerd.sock a symlink to Path.
	Link bool
}

func (s ContainerdSocket) validate() error {
	p := filepath.Clean(s.Path)
	if !filepath.IsAbs(s.Path) || p == "/run" || strings.HasPrefix(p, "/run/") || filepath.Dir(p) == "/" {
		return fmt.Errorf("containerd socket %q: want an absolute path outside /run, in a directory other than /", s.Path)
	}
	return nil
}

// inside is the socket's path inside the host.
func (s ContainerdSocket) inside() string {
	if s.Path == "" {
		return defaultContainerdSocket
	}
	return filepath.Clean(s.Path)
}

// outside is the socket's path from the test's namespace, for a host whose
// directory is dir.
func (s ContainerdSocket) outside(dir string) string {
	if s.Path == "" {
		return filepath.Join(dir, "run", "containerd", "containerd.sock")
	}
	return filepath.Join(dir, "sock", filepath.Base(s.Path))
}
