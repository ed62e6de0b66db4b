package testbed

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// containerdConfig is a host's containerd configuration. Everything lives
// under the host's directory; the socket is at the default path inside the
// host (/run is the host's own). The CRI plugin must restrict
// oom_score_adj: CAP_SYS_RESOURCE is missing from every bounding set on the
// testbed's VM, and without the restriction every pod sandbox fails with an
// opaque runc error. The sandbox image is the testbed's pause image, which
// is loaded, never pulled.
const containerdConfig = `version = 2
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "/run/containerd/containerd.sock"

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
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "%[3]s"
    conf_dir = "/etc/cni/net.d"
`

// startContainerd starts the host's containerd and waits for its socket.
func (g *hostGroup) startContainerd(ctx context.Context, h *Host) error {
	dir := filepath.Join(h.Dir, "containerd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create containerd directory: %w", err)
	}
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, fmt.Appendf(nil, containerdConfig, h.Dir, PauseImage, CNIBinDir), 0o644); err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	p, err := h.startDaemon("containerd", "containerd", "--config", config)
	if err != nil {
		return err
	}
	h.ContainerdSocket = filepath.Join(h.Dir, "run", "containerd", "containerd.sock")
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
