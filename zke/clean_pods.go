package zke

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Bounds of the clean-up's calls: one CRI call (a sandbox's stop runs
// the CNI plugins' DEL and kills its containers), and kube-proxy's
// --cleanup job.
const (
	criTeardownTimeout     = 30 * time.Second
	kubeProxyCleanupTimout = 2 * time.Minute
)

// podUIDsScript prints the UIDs of the pods of the kubelet whose
// directory is in the shell variable k and whose pod logs are in l (either
// may be empty: not read): its pod directories and its pod log
// directories (<namespace>_<name>_<uid>), which outlive a deleted pod's
// directory as long as its ended containers do. Only names made of hex
// digits and dashes are printed.
const podUIDsScript = `{ [ -n "$k" ] && for d in "$k"/pods/*/; do [ -d "$d" ] && basename "$d"; done; ` +
	`[ -n "$l" ] && for d in "$l"/*_*/; do [ -d "$d" ] && { d=${d%/}; echo "${d##*_}"; }; done; } 2>/dev/null | ` +
	`grep -E '^[0-9a-fA-F-]+$' | sort -u`

// teardownPods stops and removes, through containerd's CRI, the sandboxes
// of the pods n's kubelet ran (by the UIDs its directories name), as the
// kubelet would: containerd runs the CNI plugins' DEL for each (address
// released, port mappings and veth removed) and releases its network
// namespace. Other pods in containerd are not touched. It runs once the
// kubelet is gone, before the plugins are removed; a failure is reported
// and left to cleanScript, which kills what remains.
func (r *run) teardownPods(ctx context.Context, rep *workflow.Reporter, n node, c *transport.Client, owned []string) {
	own := func(p string) string {
		if slices.Contains(owned, p) {
			return p
		}
		return ""
	}
	k, l := own(n.dir(dirKubelet)), own(n.dir(dirPodLogs))
	if k == "" && l == "" {
		return
	}
	res, err := c.Exec(ctx, `k=`+shellQuote(k)+`; l=`+shellQuote(l)+`; `+podUIDsScript, transport.ExecOptions{})
	if err != nil {
		rep.Warnf(n.Name, "list the kubelet's pods: %v", err)
		return
	}
	uids := strings.Fields(string(res.Stdout))
	if len(uids) == 0 {
		return
	}
	pods, err := runtime.CRIListPods(ctx, c, n.ContainerdSocket, criTeardownTimeout)
	if err != nil {
		rep.Warnf(n.Name, "list containerd's pod sandboxes: %v", err)
		return
	}
	removed := 0
	for _, p := range pods {
		if !slices.Contains(uids, p.UID) {
			continue
		}
		if err := runtime.CRIRemovePod(ctx, c, n.ContainerdSocket, p.ID, criTeardownTimeout); err != nil {
			rep.Warnf(n.Name, "tear down pod %s/%s: %v", p.Namespace, p.Name, err)
			continue
		}
		removed++
	}
	rep.Logf(n.Name, "tore down %d pod sandboxes through containerd's CRI", removed)
}

// cleanupKubeProxy runs kube-proxy --cleanup on worker n, in the image
// kube-proxy ran from: kube-proxy removes every rule and chain it made
// (iptables, IPVS, nftables). Only on a node where zke ran the kubelet
// (its directory is recorded as zke's), whose kube-proxy was zke's; a
// failure is reported, never fatal.
func (r *run) cleanupKubeProxy(ctx context.Context, rep *workflow.Reporter, n node, c *transport.Client, d *runtime.Docker, owned []string) {
	if !n.HasRole(model.RoleWorker) || !slices.Contains(owned, n.dir(dirKubelet)) {
		return
	}
	image := r.images[model.ImageKubeProxy]
	if ok, err := d.ImagePresent(ctx, image); err != nil || !ok {
		rep.Warnf(n.Name, "kube-proxy's rules are left: its image %s is not on the node to run kube-proxy --cleanup", image)
		return
	}
	spec := runtime.ContainerSpec{
		Name: "kube-proxy-cleanup", Image: image,
		Entrypoint: []string{"kube-proxy"}, Cmd: []string{"--cleanup"},
		NetworkMode: "host",
		Binds:       []string{"/lib/modules:/lib/modules:ro", "/run:/run"},
	}
	if err := r.learnCapabilities(ctx, n, c); err != nil {
		rep.Warnf(n.Name, "kube-proxy's rules are left: %v", err)
		return
	}
	r.privileged(n, &spec)
	jctx, cancel := context.WithTimeout(ctx, kubeProxyCleanupTimout)
	defer cancel()
	jr, err := d.RunJob(jctx, spec)
	if err == nil {
		err = jr.Err()
	}
	if err != nil {
		rep.Warnf(n.Name, "kube-proxy --cleanup: %v", err)
		return
	}
	rep.Logf(n.Name, "kube-proxy removed its rules (kube-proxy --cleanup)")
}

// kubeletRulesCleanup is the part of cleanScript that removes what the
// kubelet makes in iptables and ip6tables (kubelet_network_linux.go): its
// canaries, the hint of the iptables mode, and KUBE-FIREWALL with the
// INPUT and OUTPUT jumps to it, spelled as the kubelet adds them;
// kube-proxy's own are removed by kube-proxy --cleanup.
func kubeletRulesCleanup() string {
	return `for ipt in iptables ip6tables; do
  command -v $ipt >/dev/null 2>&1 || continue
  for t in mangle nat filter; do $ipt -w -t $t -F KUBE-KUBELET-CANARY 2>/dev/null && $ipt -w -t $t -X KUBE-KUBELET-CANARY 2>/dev/null; done
  $ipt -w -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null
  for c in INPUT OUTPUT; do i=0; while [ $i -lt 16 ] && $ipt -w -t filter -D $c -j KUBE-FIREWALL 2>/dev/null; do i=$((i+1)); done; done
  $ipt -w -t filter -F KUBE-FIREWALL 2>/dev/null && $ipt -w -t filter -X KUBE-FIREWALL 2>/dev/null
done
true`
}

// kubeletDriverProbe is the part of cleanScript, run before the node's
// files are deleted, that records in $zke_systemd whether the kubelet
// zke ran there (its configuration at config) used the systemd cgroup
// driver.
func kubeletDriverProbe(config string) string {
	return `zke_systemd=; grep -qs '^cgroupDriver: systemd$' ` + shellQuote(config) + ` && zke_systemd=1`
}

// kubepodsCgroupsCleanup is the part of cleanScript that removes the
// empty cgroups the kubelet made under its cgroup root (root, "/" by
// default): with the cgroupfs driver, kubepods and everything below it,
// deepest first, with rmdir, which removes only a cgroup no process is
// in; with the systemd driver ($zke_systemd, kubeletDriverProbe), the
// transient kubepods.slice systemd made for it, stopped when no process
// is left in it (best effort: one still exiting leaves it to systemd).
// The systemd driver takes only the root "/" (preflight refuses others).
func kubepodsCgroupsCleanup(root string) string {
	if root == "" {
		root = "/"
	}
	return fmt.Sprintf(`r=%s
for base in /sys/fs/cgroup /sys/fs/cgroup/*; do
  d="$base${r%%/}/kubepods"
  [ -d "$d" ] || continue
  find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
done
if [ -n "$zke_systemd" ] && [ "$r" = / ] && command -v systemctl >/dev/null 2>&1; then
  for s in /sys/fs/cgroup/kubepods.slice /sys/fs/cgroup/systemd/kubepods.slice; do
    [ -d "$s" ] || continue
    [ -z "$(find "$s" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] && systemctl stop kubepods.slice 2>/dev/null
    break
  done
fi
true`, shellQuote(root))
}

// ipamStateCleanup is the part of cleanScript that removes what the
// host-local IPAM plugin kept for zke's pod network (named cniNetworkName
// in its config): the files of its layout (one per address still
// allocated, last_reserved_ip.<range>, lock), then the directory if that
// left it empty.
func ipamStateCleanup() string {
	return `d=/var/lib/cni/networks/` + cniNetworkName + `
if [ -d "$d" ] && [ ! -L "$d" ]; then
  find "$d" -maxdepth 1 -type f \( -name 'last_reserved_ip.*' -o -name lock -o -regex '.*/[0-9a-fA-F.:]+' \) -delete 2>/dev/null
  rmdir "$d" 2>/dev/null
fi
true`
}

// learnCapabilities reads n's capability bounding set into its facts, as
// preflight does, for a run without a preflight (a delete): a privileged
// container on a node that lacks some capability must drop them.
func (r *run) learnCapabilities(ctx context.Context, n node, c *transport.Client) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	res, err := c.Exec(ctx, "grep CapBnd /proc/self/status", transport.ExecOptions{})
	if err != nil {
		return fmt.Errorf("read the capability bounding set: %w", err)
	}
	fields := strings.Fields(string(res.Stdout))
	if len(fields) != 2 {
		return fmt.Errorf("read the capability bounding set: unexpected %q", res.Stdout)
	}
	bnd, err := strconv.ParseUint(fields[1], 16, 64)
	if err != nil {
		return fmt.Errorf("read the capability bounding set: %w", err)
	}
	missing := missingCaps(bnd)
	r.mu.Lock()
	nf := r.facts[n.Name]
	nf.canPrivileged, nf.missingCaps = len(missing) == 0, missing
	r.facts[n.Name] = nf
	r.mu.Unlock()
	return nil
}
