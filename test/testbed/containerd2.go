package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Containerd2Version is the containerd that hosts listed in
// HostOptions.Containerd2 run, built by `make testbin` from its Go module.
const Containerd2Version = "v2.4.2"

// containerd2Dir holds, in the testbin, containerd 2's containerd, ctr and
// containerd-shim-runc-v2. It is not bin/, so that nothing finds them
// instead of Debian's containerd 1.6.
const containerd2Dir = "containerd2/bin"

// Containerd2SandboxImage is the CRI's sandbox (pause) image of
// Containerd2Version by default, which hosts on containerd 2 keep: the pause
// image's archive carries this tag too, and it is always loaded.
const Containerd2SandboxImage = "registry.k8s.io/pause:3.10.2"

// containerd2Config is the configuration of a host on containerd 2: only
// what each host must have of its own, everything else at containerd 2's
// defaults, as on a machine where containerd 2 was installed as it comes.
// Its data and state live under the host's directory (containerd's
// overlayfs snapshotter cannot work on the host's copy-on-write /var); the
// socket is where the host's ContainerdSocketPath says; the opt plugin's
// directory (/opt/containerd, shared by the machine) and runc's root for
// the CRI's pods are the host's own, as with containerd 1.6. The CRI plugin
// keeps its defaults: CNI configurations from /etc/cni/net.d and plugins
// from /opt/cni/bin (both the host's own, empty until zke installs them),
// the cgroupfs driver (SystemdCgroup = false), the sandbox image
// Containerd2SandboxImage. The version is containerd 2.4's latest (what
// `containerd config default` writes; 3 would be migrated at each start).
// %[3]s is containerd2OOMSection or nothing.
const containerd2Config = `version = 4
root = "%[1]s/containerd/root"
state = "%[1]s/containerd/state"

[grpc]
  address = "%[2]s"

[plugins.'io.containerd.internal.v1.opt']
  path = "%[1]s/containerd/opt"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  Root = "%[1]s/runc"
%[3]s`

// containerd2OOMSection restricts the CRI's oom_score_adj, on a machine
// whose processes lack CAP_SYS_RESOURCE in their bounding set (this VM's):
// without it every pod sandbox fails (runc cannot lower oom_score_adj to
// the CRI's -998). It is the machine's limitation, not the host's, so a
// machine with the capability gets containerd 2's default (false).
const containerd2OOMSection = `
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
`

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/<pid>/status.
const capSysResource = 24

// lacksCapSysResource reports whether CAP_SYS_RESOURCE is missing from
// this process's bounding set, and so from every daemon's on the hosts.
func lacksCapSysResource() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<capSysResource) == 0
		}
	}
	return false
}

// containerd2Bin returns the directory of containerd 2's binaries in the
// testbin (at the same path inside hosts).
func containerd2Bin(testbin string) string { return filepath.Join(testbin, containerd2Dir) }

// checkContainerd2 is NeedContainerd2's check.
func checkContainerd2() error {
	testbin, err := Testbin()
	if err != nil {
		return err
	}
	for _, b := range []string{"containerd", "ctr", "containerd-shim-runc-v2"} {
		p := filepath.Join(containerd2Bin(testbin), b)
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: %s is not built: run make testbin (or set %s)", ErrMissing, p, TestbinEnv)
		}
	}
	return nil
}

// validateHostList checks a HostOptions list of host indexes (field is
// its name) for n hosts.
func validateHostList(field string, hosts []int, n int) error {
	seen := map[int]bool{}
	for _, i := range hosts {
		if i < 1 || i > n {
			return fmt.Errorf("%s: host %d: there are hosts 1 to %d", field, i, n)
		}
		if seen[i] {
			return fmt.Errorf("%s: host %d is listed twice", field, i)
		}
		seen[i] = true
	}
	return nil
}

// startContainerd2 starts containerd 2 on the host and waits for its
// socket. Its PATH starts with containerd 2's directory, so that it runs
// containerd 2's containerd-shim-runc-v2 (it looks the shim up in PATH,
// where Debian's 1.6 shim is in /usr/bin); the shim runs Debian's runc
// (/usr/sbin), as the rest of PATH finds it.
func (g *hostGroup) startContainerd2(ctx context.Context, h *Host) error {
	dir := filepath.Join(h.Dir, "containerd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create containerd directory: %w", err)
	}
	oom := ""
	if lacksCapSysResource() {
		oom = containerd2OOMSection
	}
	config := filepath.Join(dir, "config.toml")
	conf := fmt.Appendf(nil, containerd2Config, h.Dir, h.ContainerdSocketPath, oom)
	if err := os.WriteFile(config, conf, 0o644); err != nil {
		return fmt.Errorf("write containerd config: %w", err)
	}
	bin := containerd2Bin(g.testbin)
	cmd := h.command(filepath.Join(bin, "containerd"), "--config", config)
	for i, e := range cmd.Env {
		if path, ok := strings.CutPrefix(e, "PATH="); ok {
			cmd.Env[i] = "PATH=" + bin + ":" + path
		}
	}
	p, err := h.startDaemonCmd("containerd", cmd)
	if err != nil {
		return err
	}
	h.ContainerdSocket = h.sock.outside(h.Dir)
	if err := waitSocket(ctx, p, h.ContainerdSocket); err != nil {
		return fmt.Errorf("%w: containerd %s: %w", ErrNotReady, Containerd2Version, err)
	}
	return nil
}
