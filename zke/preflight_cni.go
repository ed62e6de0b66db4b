package zke

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Where the pod network config goes on a worker: cniConfName in the
// directory its containerd reads CNI configs from, as the CRI status
// reports it (criFacts.cniConfDir); defaultCNIConfDir, containerd's
// default, when the runtime does not say.
const (
	defaultCNIConfDir = "/etc/cni/net.d"
	cniConfName       = "10-zke-bridge.conflist"
)

// criFacts is what preflight learnt from a worker's container runtime
// over CRI (zero on other nodes and before preflight).
type criFacts struct {
	// cniConfDir is where containerd reads CNI configs; "" when it did
	// not say (defaultCNIConfDir is used).
	cniConfDir string
	// cniBinDirs are the directories it looks for CNI plugins in, in
	// order; empty when it did not say (defaultCNIBinDir is used).
	cniBinDirs []string
	// cgroupDriver is the runtime's cgroup driver, which the kubelet's
	// must match; "" when unknown (cgroupfs is used).
	cgroupDriver string
	// rootDir is containerd's root directory, which the kubelet's
	// container must see to measure its image file system; "" when it
	// did not say.
	rootDir string
	// sandboxImage is the image containerd runs every pod's sandbox
	// in, which must be in containerd (it cannot pull one on an
	// air-gapped node); "" when it did not say (containerd 2).
	sandboxImage string
}

// cniConfPath is where n's pod network config goes (and is verified and
// removed): cniConfName in the directory n's containerd reads CNI configs
// from (the CRI status preflight read), else in defaultCNIConfDir.
// Clean-up of a run without a preflight finds the path in the State's
// record of what zke wrote.
func (r *run) cniConfPath(n node) string {
	dir := r.factsOf(n).cri.cniConfDir
	if dir == "" {
		dir = defaultCNIConfDir
	}
	return path.Join(dir, cniConfName)
}

// isCNIConfPath reports whether p is a pod network config zke writes
// (cniConfName in some absolute, clean directory): a recorded path is
// deleted only when it is.
func isCNIConfPath(p string) bool {
	return path.IsAbs(p) && path.Clean(p) == p && path.Base(p) == cniConfName && p != "/"+cniConfName
}

// cgroupDriver is the cgroup driver n's kubelet is configured with: its
// runtime's, as preflight found it, or cgroupfs when unknown.
func (r *run) cgroupDriver(n node) string {
	if d := r.factsOf(n).cri.cgroupDriver; d != "" {
		return d
	}
	return runtime.CgroupDriverCgroupfs
}

// checkCRIConfig asks the containerd of worker n, at the resolved socket,
// where it reads CNI configs and plugins and how it drives cgroups
// (c dials the socket from the node); records what it learnt in n's
// facts. The kubelet is configured with the runtime's cgroup driver:
// cgroupfs, or systemd, which it drives from its container through the
// host's /run (systemd's D-Bus socket) and /sys/fs/cgroup. A runtime whose
// CRI config cannot be read is logged and falls back to defaultCNIConfDir
// and cgroupfs. The problem it returns is a kubelet cgroup root the
// systemd driver cannot take (systemdCgroupRootProblem); missing CNI
// plugins are the artifacts step's to install.
func (r *run) checkCRIConfig(ctx context.Context, rep *workflow.Reporter, n node, c *transport.Client, socket string) ([]string, error) {
	cfg, statusErr := runtime.CRIStatusConfig(ctx, c, socket, probeTimeout)
	if statusErr != nil && ctx.Err() != nil {
		return nil, statusErr
	}
	driver, from, err := criCgroupDriver(ctx, c, socket, cfg, statusErr == nil)
	if err != nil {
		return nil, err
	}
	fs, missing, err := probeCNIPlugins(ctx, c, cfg.CNIBinDirs)
	if err != nil {
		return nil, nodeErr(n, err, "")
	}
	r.mu.Lock()
	nf := r.facts[n.Name]
	nf.cri = criFacts{cniConfDir: cfg.CNIConfDir, cniBinDirs: cfg.CNIBinDirs, cgroupDriver: driver, rootDir: cfg.RootDir, sandboxImage: cfg.SandboxImage}
	r.facts[n.Name] = nf
	r.mu.Unlock()
	cgroups := fmt.Sprintf("cgroup %s (%s)", cgroupVersionOf(fs), fs)
	if statusErr != nil {
		rep.Warnf(n.Name, "containerd's CRI config cannot be read (%v): the pod network config goes to %s and missing CNI plugins to %s; cgroup driver %s (%s), %s",
			statusErr, defaultCNIConfDir, defaultCNIBinDir, r.cgroupDriver(n), from, cgroups)
	} else {
		rep.Logf(n.Name, "containerd reads CNI configs from %s and plugins from %s; cgroup driver %s (%s), %s",
			cfg.CNIConfDir, strings.Join(cfg.CNIBinDirs, ", "), driver, from, cgroups)
	}
	if len(missing) > 0 {
		rep.Logf(n.Name, "containerd finds no %s in %s: the artifacts step installs them (CNI plugins %s)",
			strings.Join(missing, ", "), strings.Join(r.cniBinDirs(n), ", "), cniPluginsVersion)
	}
	if driver == runtime.CgroupDriverSystemd {
		if p := systemdCgroupRootProblem(n); p != "" {
			return []string{p}, nil
		}
	}
	return nil, nil
}

// criCgroupDriver finds the runtime's cgroup driver and says where from:
// the RuntimeConfig call (containerd 2.x), else the default runtime's
// SystemdCgroup option in the CRI config (1.x; haveCfg says cfg was
// read), else cgroupfs, what zke has always configured. Only the end of
// ctx is an error.
func criCgroupDriver(ctx context.Context, d runtime.Dialer, socket string, cfg runtime.CRIConfig, haveCfg bool) (driver, from string, err error) {
	driver, err = runtime.CRICgroupDriver(ctx, d, socket, probeTimeout)
	if err == nil {
		return driver, "CRI runtime config", nil
	}
	if ctx.Err() != nil {
		return "", "", err
	}
	// containerd 1.x answers Unimplemented; a runtime that fails the
	// call otherwise is judged by its config too.
	if haveCfg {
		if cfg.SystemdCgroup {
			return runtime.CgroupDriverSystemd, "SystemdCgroup = true in its " + cfg.DefaultRuntime + " runtime options", nil
		}
		return runtime.CgroupDriverCgroupfs, "SystemdCgroup unset or false in its " + cfg.DefaultRuntime + " runtime options", nil
	}
	return "", "not reported", nil
}

// probeCNIPlugins runs one bounded command on the node (cniProbeScript)
// and returns the file system type of /sys/fs/cgroup and the plugins the
// pod network config needs that are an executable file in none of dirs
// (none is checked when dirs is empty).
func probeCNIPlugins(ctx context.Context, c *transport.Client, dirs []string) (cgroupFS string, missing []string, err error) {
	plugins, err := cniPluginsNeeded()
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	res, err := c.Exec(ctx, cniProbeScript(plugins, dirs), transport.ExecOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("look for the CNI plugins and the cgroup version: %w", err)
	}
	cgroupFS, missing = parseCNIProbe(string(res.Stdout))
	return cgroupFS, missing, nil
}

// cniProbeScript prints the file system type of /sys/fs/cgroup, then
// "missing <plugin>" for each of plugins that is an executable file in
// none of dirs (every name shell-quoted).
func cniProbeScript(plugins, dirs []string) string {
	script := "stat -fc %T /sys/fs/cgroup 2>/dev/null || echo unknown\n"
	if len(dirs) == 0 {
		return script
	}
	q := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = shellQuote(s)
		}
		return strings.Join(out, " ")
	}
	return script + `for p in ` + q(plugins) + `; do
  found=
  for d in ` + q(dirs) + `; do
    if [ -f "$d/$p" ] && [ -x "$d/$p" ]; then found=1; break; fi
  done
  [ -n "$found" ] || echo "missing $p"
done
`
}

// parseCNIProbe reads cniProbeScript's output.
func parseCNIProbe(out string) (cgroupFS string, missing []string) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, ln := range lines[1:] {
		if p, ok := strings.CutPrefix(ln, "missing "); ok {
			missing = append(missing, p)
		}
	}
	return strings.TrimSpace(lines[0]), missing
}

// cniPluginsNeeded are the plugins the bridge pod network config chains
// (their "type", with the IPAM plugin's), read from the config itself so
// that the check follows it.
func cniPluginsNeeded() ([]string, error) {
	conf, err := bridgeCNIConfig("10.0.0.0/24", 0)
	if err != nil {
		return nil, err
	}
	var list struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Type string `json:"type"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(conf, &list); err != nil {
		return nil, fmt.Errorf("read the plugins of the bridge CNI config: %w", err)
	}
	var out []string
	for _, p := range list.Plugins {
		for _, t := range []string{p.Type, p.IPAM.Type} {
			if t != "" && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// cgroupVersionOf names the cgroup version of a /sys/fs/cgroup file
// system type.
func cgroupVersionOf(fs string) string {
	switch fs {
	case "cgroup2fs":
		return "v2"
	case "tmpfs":
		return "v1"
	}
	return "version unknown"
}

// systemdCgroupRootProblem refuses a kubelet cgroupRoot other than "/"
// under the systemd driver: the kubelet would turn /a-b into the slice
// a_b.slice, which nobody created, and crash-loop ("cgroup-root doesn't
// exist") instead of saying why. "" when the root is the default.
func systemdCgroupRootProblem(n node) string {
	if root := n.Kubelet.CgroupRoot; root != "" && root != "/" {
		return fmt.Sprintf("containerd on %s uses systemd cgroups, with which the kubelet takes its cgroup root as a systemd slice: node %s's kubelet.cgroupRoot %q is a cgroupfs path; leave it empty (the default, /), or set SystemdCgroup = false in containerd's runc options and restart containerd",
			n.Name, n.Name, root)
	}
	return ""
}
