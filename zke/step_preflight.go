package zke

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Preflight thresholds. Below the minimum a node is refused; between the
// two a warning is logged.
const (
	minMemoryKiB     = 1 << 20 // 1 GiB: etcd + apiserver barely fit
	minDiskFreeKiB   = 2 << 20 // 2 GiB for images, etcd data and logs
	warnDiskFreeKiB  = 10 << 20
	maxClockSkewSecs = 30 // TLS and etcd leases break beyond this
	warnClockSkew    = 2
)

// preflight checks every node before anything is changed on it, and
// reports every problem of every node at once, each with a hint.
func (r *run) preflight(ctx context.Context, rep *workflow.Reporter) error {
	err := workflow.ForEach(ctx, r.nodes, nodeConcurrency, func(ctx context.Context, n node) error {
		c, err := r.client(n)
		if err != nil {
			return err
		}
		res, err := c.Exec(ctx, preflightScript(n.PrefixPath), transport.ExecOptions{})
		if err != nil {
			return nodeErr(n, fmt.Errorf("run preflight checks: %w", err), "")
		}
		f, err := parsePreflight(string(res.Stdout))
		if err != nil {
			return nodeErr(n, err, "")
		}
		owned, err := r.ownedPorts(ctx, n)
		if err != nil {
			return err
		}
		f.VXLANNeeded = flannelBackend(r.cfg.Network.Plugin) == flannelBackendVXLAN
		f.FlannelNeeded = r.runsFlannel()
		f.SharedEndpoint = r.sharedEndpoint()
		problems, warnings := checkNode(n, f, owned, r.in.clock().Unix())
		if p := foreignFlannel(n, f, r.ownedPaths(n)); p != "" {
			problems = append(problems, p)
		}
		runtimeProblems, err := r.checkRuntimes(ctx, rep, n)
		if err != nil {
			return err
		}
		problems = append(problems, runtimeProblems...)
		if err := r.checkDNS(ctx, rep, n, &problems); err != nil {
			return err
		}
		free, foreign, err := r.checkPaths(ctx, n, c)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			rep.Warnf(n.Name, "%s", w)
		}
		missing := missingCaps(f.CapBnd)
		var iface string
		var network netip.Prefix
		var sight vipSight
		vip := r.sharedEndpoint() && n.HasRole(model.RoleControlPlane)
		if vip || r.needsSegment(n) {
			if iface, network, err = r.discoverInterface(ctx, n, c); err != nil {
				return err
			}
		}
		if vip {
			if p := vipProblem(n, r.cfg.ControlPlaneEndpoint.VIP, iface, network); p != "" {
				problems = append(problems, p)
			} else if r.vipUnclaimed() {
				if sight, err = r.probeVIP(ctx, n, c, iface); err != nil {
					return err
				}
			}
		}
		r.mu.Lock()
		nf := r.facts[n.Name]
		nf.canPrivileged = len(missing) == 0
		nf.missingCaps = missing
		nf.iface = iface
		nf.network = network
		nf.vip = sight
		r.facts[n.Name] = nf
		r.mu.Unlock()
		if len(missing) > 0 {
			rep.Logf(n.Name, "capability bounding set lacks %s: privileged containers are built as --cap-add ALL --cap-drop %s",
				strings.Join(missing, ","), strings.Join(missing, ","))
		}
		if len(problems) > 0 || len(foreign) > 0 {
			return workflow.UserFixable(nodeErr(n, nodeProblems(problems, foreign), r.foreignHint(n, foreign)))
		}
		r.record(n, free)
		rep.Report(n.Name, fmt.Sprintf("%s/%s, %d MiB memory, %d MiB free disk: ok", f.OS, f.Arch, f.MemTotalKiB>>10, f.DiskFreeKiB>>10))
		return nil
	})
	if err != nil {
		return err
	}
	if err := r.segmentProblem(); err != nil {
		return err
	}
	return r.vipTaken()
}

// ownedPorts lists the ports of n that zke's own running containers hold
// (from an earlier run), which are not "in use" for preflight.
func (r *run) ownedPorts(ctx context.Context, n node) (map[int]bool, error) {
	d, err := r.docker(n)
	if err != nil {
		return nil, err
	}
	cs, err := d.List(ctx, r.cfg.Name)
	if err != nil {
		return nil, nodeErr(n, fmt.Errorf("list zke's containers: %w", err), "")
	}
	owned := map[int]bool{}
	for _, c := range cs {
		if c.State != "running" {
			continue
		}
		for _, p := range componentPorts[c.Name] {
			owned[p] = true
		}
	}
	return owned, nil
}

// componentPorts are the ports each zke container listens on.
var componentPorts = map[string][]int{
	containerEtcd:              {portEtcdClient, portEtcdPeer, 2381},
	containerAPIServer:         {portAPIServer},
	containerControllerManager: {portControllerManager},
	containerScheduler:         {portScheduler},
	containerHAProxy:           {model.APIEndpointPort},
	containerKubelet:           {portKubelet, 10248},
	containerKubeProxy:         {portKubeProxyMetrics, portKubeProxyHealth},
}

// checkNode applies the preflight rules to one node's facts. It returns
// the problems that stop the run and the warnings that do not, each a
// sentence saying what to do.
func checkNode(n node, f probeFacts, owned map[int]bool, now int64) (problems, warnings []string) {
	if f.OS != "Linux" {
		problems = append(problems, fmt.Sprintf("operating system is %q: zke installs on Linux only", f.OS))
	}
	switch f.Arch {
	case "x86_64", "aarch64":
	default:
		problems = append(problems, fmt.Sprintf("architecture %q is not supported: use an x86_64 or aarch64 host", f.Arch))
	}
	if f.MemTotalKiB < minMemoryKiB {
		problems = append(problems, fmt.Sprintf("only %d MiB of memory: give the host at least %d MiB", f.MemTotalKiB>>10, minMemoryKiB>>10))
	}
	switch {
	case f.DiskFreeKiB < minDiskFreeKiB:
		problems = append(problems, fmt.Sprintf("only %d MiB free under %s: free at least %d MiB", f.DiskFreeKiB>>10, n.PrefixPath, minDiskFreeKiB>>10))
	case f.DiskFreeKiB < warnDiskFreeKiB:
		warnings = append(warnings, fmt.Sprintf("only %d MiB free under %s; images and etcd data grow", f.DiskFreeKiB>>10, n.PrefixPath))
	}
	if f.SwapDevices > 0 {
		warnings = append(warnings, "swap is on: the kubelet runs with failSwapOn=false, but memory limits are less reliable; consider swapoff -a")
	}
	skew := f.EpochSeconds - now
	if skew < 0 {
		skew = -skew
	}
	switch {
	case skew > maxClockSkewSecs:
		problems = append(problems, fmt.Sprintf("clock differs from singlecloud's by %d s: synchronise it (chrony or systemd-timesyncd)", skew))
	case skew > warnClockSkew:
		warnings = append(warnings, fmt.Sprintf("clock differs from singlecloud's by %d s; synchronise it", skew))
	}
	for _, p := range requiredPorts(n, f.SharedEndpoint) {
		if f.Listening[p] && !owned[p] {
			problems = append(problems, fmt.Sprintf("port %d is in use: stop what listens on it (ss -ltnp 'sport = :%d')", p, p))
		}
	}
	if n.HasRole(model.RoleWorker) {
		problems = append(problems, kernelProblems(f.Kernel, f.VXLANNeeded)...)
	}
	return problems, warnings
}

// kernelProblems are the kernel settings a worker's pods need that the
// node lacks, each with its fix (docs: the hosts page in README): IP
// forwarding (pod traffic between nodes), bridge netfilter (Service
// traffic between pods on one node's bridge goes through kube-proxy's
// rules only with it) and the overlay file system (containerd's
// snapshotter); with flannel (vxlan), VXLAN (its tunnel between the
// nodes: a module the kernel loads when flanneld makes its device). A
// setting the probe did not report is not judged.
func kernelProblems(k map[string]string, vxlan bool) []string {
	var out []string
	persist := "and persist it in /etc/sysctl.d/99-kubernetes.conf"
	switch k[kernelIPForward] {
	case "0":
		out = append(out, "IP forwarding is off (net.ipv4.ip_forward = 0): pods on other nodes cannot be reached; run sysctl -w net.ipv4.ip_forward=1 "+persist)
	case "missing":
		out = append(out, "net.ipv4.ip_forward is missing from /proc/sys: the kernel has no IPv4 forwarding; use a kernel with it")
	}
	switch k[kernelBridgeNF] {
	case "0":
		out = append(out, "bridge netfilter is off (net.bridge.bridge-nf-call-iptables = 0): Services do not work between pods on one node; run sysctl -w net.bridge.bridge-nf-call-iptables=1 "+persist)
	case "missing":
		out = append(out, "the br_netfilter module is not loaded: Services do not work between pods on one node; run modprobe br_netfilter, add br_netfilter to /etc/modules-load.d/kubernetes.conf, and set net.bridge.bridge-nf-call-iptables=1")
	}
	if k[kernelOverlay] == "no" {
		out = append(out, "the kernel has no overlay file system (containerd's snapshotter): use a kernel with the overlay module")
	}
	if vxlan && k[kernelVXLAN] == "no" {
		out = append(out, "the kernel has no VXLAN (flannel's tunnel between the nodes): install the kernel's extra modules (linux-modules-extra on Ubuntu) or use network plugin bridge on nodes that share one layer-2 network")
	}
	return out
}

// foreignFlannel is the problem of a worker whose pod network runs
// flanneld (either plugin) on which a flannel device or lease already is
// although zke has not run a kubelet there
// (its kubelet directory is not among owned): another flannel runs on the
// host (another cluster's, k3s's), whose device and rules this cluster's
// flanneld would share and its delete remove. Empty when there is none.
func foreignFlannel(n node, f probeFacts, owned []string) string {
	if !f.FlannelNeeded || !n.HasRole(model.RoleWorker) || f.Kernel[kernelFlannelDevice] != "yes" ||
		slices.Contains(owned, n.dir(dirKubelet)) {
		return ""
	}
	return "a flannel device (flannel.1) or lease (/run/flannel/subnet.env) is already on this host: another flannel runs here (another cluster's? k3s's?), " +
		"which this cluster's flannel would share and its delete remove; stop it and remove its device " +
		"(ip link delete flannel.1; rm -f /run/flannel/subnet.env), or use another host"
}

// requiredPorts are the ports n's components will listen on: with a
// shared endpoint, a control-plane node's haproxy too.
func requiredPorts(n node, sharedEndpoint bool) []int {
	var ps []int
	if n.HasRole(model.RoleEtcd) {
		ps = append(ps, portEtcdClient, portEtcdPeer)
	}
	if n.HasRole(model.RoleControlPlane) {
		ps = append(ps, portAPIServer, portControllerManager, portScheduler)
		if sharedEndpoint {
			ps = append(ps, model.APIEndpointPort)
		}
	}
	if n.HasRole(model.RoleWorker) {
		ps = append(ps, portKubelet)
	}
	return ps
}
