package testbed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
)

// startDocker starts the host's dockerd on the host's containerd (its data
// under the host's directory, its socket at the default
// /var/run/docker.sock inside the host), with no bridge and no iptables
// rules, containers in the host's cgroup, and waits for /_ping.
func (g *hostGroup) startDocker(ctx context.Context, h *Host) error {
	data := filepath.Join(h.Dir, "docker")
	if err := os.MkdirAll(data, 0o711); err != nil {
		return fmt.Errorf("create docker directory: %w", err)
	}
	p, err := h.startDaemon("dockerd", "dockerd",
		"--containerd="+h.ContainerdSocketPath,
		"--data-root="+data, "--exec-root=/run/docker", "--pidfile=/run/docker.pid", "--host=unix:///run/docker.sock",
		"--iptables=false", "--ip-masq=false", "--bridge=none", "--userland-proxy=false",
		"--storage-driver=overlay2", "--exec-opt=native.cgroupdriver=cgroupfs", "--cgroup-parent="+h.cgroup+"/docker",
	)
	if err != nil {
		return err
	}
	h.DockerSocket = filepath.Join(h.Dir, "run", "docker.sock")
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", h.DockerSocket)
		},
		DisableKeepAlives: true,
	}, Timeout: probeTimeout}
	err = poll(ctx, func(ctx context.Context) error {
		if p.exited() {
			return p.exitError()
		}
		return getOK(ctx, client, "http://docker/_ping")
	})
	if err != nil {
		return fmt.Errorf("%w: dockerd: %w", ErrNotReady, err)
	}
	return nil
}

// PrivilegedDockerFlags are the `docker run` flags that stand in for
// --privileged on the testbed's VM, where --privileged fails ("unable to
// apply caps") because CAP_SYS_RESOURCE is missing from every process's
// bounding set: every other capability, no seccomp, AppArmor or masked
// paths, and access to all devices.
func PrivilegedDockerFlags() []string {
	return []string{
		"--cap-add=ALL", "--cap-drop=SYS_RESOURCE",
		"--security-opt=seccomp=unconfined", "--security-opt=apparmor=unconfined", "--security-opt=systempaths=unconfined",
		"--device-cgroup-rule=a *:* rwm",
	}
}
