package zke

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// cleanAll removes zke's containers, directories, pod network config and
// routes from every connected node (a node skipped by a forced connect is
// left alone).
func (r *run) cleanAll(ctx context.Context, rep *workflow.Reporter) error {
	var connected []node
	for _, n := range r.nodes {
		if _, err := r.client(n); err == nil {
			connected = append(connected, n)
		}
	}
	return workflow.ForEach(ctx, connected, nodeConcurrency, func(ctx context.Context, n node) error {
		return r.cleanNode(ctx, rep, n)
	})
}

// cleanNode removes what zke put on n and nothing else: zke's containers
// of this cluster, the pods the cluster's kubelet started, the paths the
// State proves zke's on n (ownership.go), the zke0 bridge and the routes
// tagged as zke's. zke's other paths that hold something are left, with a
// warning naming them.
func (r *run) cleanNode(ctx context.Context, rep *workflow.Reporter, n node) error {
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	before, err := d.List(ctx, r.cfg.Name)
	if err != nil {
		return nodeErr(n, fmt.Errorf("list zke's containers: %w", err), "")
	}
	if err := d.RemoveAll(ctx, r.cfg.Name); err != nil {
		return nodeErr(n, fmt.Errorf("remove zke's containers: %w", err), "")
	}
	c, err := r.client(n)
	if err != nil {
		return err
	}
	owned := r.ownedPaths(n)
	// With the kubelet gone: its pods torn down as it would (CNI DEL),
	// then kube-proxy's rules, then files, links, rules and cgroups.
	r.teardownPods(ctx, rep, n, c, owned)
	r.cleanupKubeProxy(ctx, rep, n, c, d, owned)
	res, err := c.Exec(ctx, cleanScript(n, owned, r.podNetCleanup()), transport.ExecOptions{})
	if err != nil {
		return nodeErr(n, fmt.Errorf("remove zke's files: %w", err), "")
	}
	if r.sharedEndpoint() && n.HasRole(model.RoleControlPlane) {
		// keepalived killed with its container leaves the VIP on the
		// node's interface, where it would still answer for it.
		if _, err := c.Exec(ctx, dropVIPScript(r.cfg.ControlPlaneEndpoint.VIP), transport.ExecOptions{}); err != nil {
			return nodeErr(n, fmt.Errorf("remove the virtual IP: %w", err), "")
		}
	}
	if left := leftPaths(string(res.Stdout), unproven(n, owned)); len(left) > 0 {
		rep.Warnf(n.Name, "left %s as it is: zke has no record of making it (it was there before zke, or an earlier cluster's); delete it by hand if it is zke's",
			strings.Join(left, ", "))
	}
	rep.Report(n.Name, fmt.Sprintf("removed %d containers and %d of zke's paths", len(before), len(owned)))
	return nil
}

// unproven are zke's paths on n (allPaths) that owned, n's record, does
// not prove zke's: clean-up reports those that hold something.
func unproven(n node, owned []string) []string {
	var out []string
	for _, p := range allPaths(n) {
		if !slices.Contains(owned, p) {
			out = append(out, p)
		}
	}
	return out
}

// leftPaths reads the "left <index>" lines of cleanScript's output: the
// paths of candidates that hold something.
func leftPaths(out string, candidates []string) []string {
	var left []string
	for _, line := range strings.Split(out, "\n") {
		i, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "left "))
		if strings.HasPrefix(line, "left ") && err == nil && i >= 0 && i < len(candidates) {
			left = append(left, candidates[i])
		}
	}
	return left
}

// Bounds of the containerd commands of cleanScript, in seconds: listing
// and killing answer at once on a healthy containerd; deleting a task
// waits for its processes to exit after SIGKILL.
const (
	ctrListTimeoutSecs   = 10
	ctrKillTimeoutSecs   = 10
	ctrDeleteTimeoutSecs = 30
)

// cleanScript stops the pods the cluster's kubelet ran in containerd
// and unmounts what the kubelet mounted under its directory
// (unmountUnder), when that directory is zke's; deletes owned, the paths
// proven zke's on n; and prints "left <i>" for the i-th of n's unproven
// paths when it holds something (never deleted); it removes earlier
// releases' nat chain and routes too (masqCleanup, routeProto), and, when
// the pod network runs flanneld (pn) and the node's kubelet was zke's,
// what flanneld made (flannelCleanup, hostGWRouteCleanup). Every path is
// shell-quoted. Of containerd's containers only this kubelet's pods are
// touched (see podContainersCleanup); whatever else runs in containerd
// stays.
func cleanScript(n node, owned []string, pn podNetCleanup) string {
	own := func(p string) string {
		if slices.Contains(owned, p) {
			return p
		}
		return ""
	}
	k, l := own(n.dir(dirKubelet)), own(n.dir(dirPodLogs))
	var lines []string
	if k != "" || l != "" {
		lines = append(lines, `k=`+shellQuote(k), `l=`+shellQuote(l), podContainersCleanup(n.ContainerdSocket))
	}
	if k != "" {
		lines = append(lines, kubeletDriverProbe(kubeletConfigFile(n)))
	}
	if k != "" {
		lines = append(lines, unmountUnder("k", "/proc/mounts"))
	}
	if len(owned) > 0 {
		lines = append(lines, `rm -rf -- `+quoteAll(owned))
	}
	lines = append(lines,
		`ip link del zke0 2>/dev/null || true`,
		`ip route flush proto `+routeProto+` 2>/dev/null || true`,
		masqCleanup())
	if k != "" {
		// The kubelet zke ran made these.
		lines = append(lines, kubeletRulesCleanup(), kubepodsCgroupsCleanup(n.Kubelet.CgroupRoot), ipamStateCleanup())
		if pn.Flannel {
			lines = append(lines, flannelCleanup(), hostGWRouteCleanup(pn.ClusterCIDR, pn.Gateways))
		}
	}
	lines = append(lines, pathStateFunc)
	for i, p := range unproven(n, owned) {
		lines = append(lines, fmt.Sprintf(`case "$(zke_path_state %s)" in absent|empty) ;; *) echo 'left %d';; esac`, shellQuote(p), i))
	}
	return strings.Join(append(lines, `exit 0`), "\n")
}

// quoteAll shell-quotes each of paths, space-separated.
func quoteAll(paths []string) string {
	return strings.Join(quoteEach(paths), " ")
}

// unmountUnder is the part of cleanScript that lazily unmounts, deepest
// first, every mount point of mounts (a /proc/mounts) strictly under the
// directory in the shell variable named dirVar. The directory is compared
// as a plain prefix (awk's index, given through the environment, which
// awk does not unescape), never as a pattern, so that no character of the
// node's prefixPath can widen the match; each mount point is one line
// read verbatim, never split or globbed by the shell.
func unmountUnder(dirVar, mounts string) string {
	return `ZKE_DIR="$` + dirVar + `" awk 'index($2, ENVIRON["ZKE_DIR"] "/") == 1 {print $2}' ` + shellQuote(mounts) +
		` | sort -r | while IFS= read -r m; do umount -l "$m" 2>/dev/null || true; done`
}

// podContainersCleanup is the part of cleanScript that kills and deletes
// the containerd containers (sandboxes included) of the pods of this
// kubelet, and nothing else in containerd: the pods named by the
// kubelet's own records, the pod directories under "$k"/pods (k, the
// kubelet's directory, is set by the caller; empty, it is not read) and
// the pod log directories "$l"/<namespace>_<name>_<uid> (l likewise), which outlive a deleted
// pod's directory as long as its ended containers do. A name that is not
// a pod UID (hex digits and dashes) is skipped, so that nothing from the
// file system reaches the ctr filter unchecked. Each containerd call is
// bounded by timeout(1).
func podContainersCleanup(containerdSocket string) string {
	ctr := `ctr -a "$a" -n k8s.io`
	return strings.Join([]string{
		`a=` + shellQuote(containerdSocket),
		`bounded() { s=$1; shift; if command -v timeout >/dev/null 2>&1; then timeout "$s" "$@"; else "$@"; fi; }`,
		`if command -v ctr >/dev/null 2>&1 && [ -S "$a" ]; then`,
		`  uids=$( { [ -n "$k" ] && for d in "$k"/pods/*/; do [ -d "$d" ] && basename "$d"; done; [ -n "$l" ] && for d in "$l"/*_*/; do [ -d "$d" ] && { d=${d%/}; echo "${d##*_}"; }; done; } | sort -u)`,
		`  set -f`,
		`  for u in $uids; do`,
		`    case "$u" in ''|*[!0-9a-fA-F-]*) continue;; esac`,
		fmt.Sprintf(`    for c in $(bounded %d %s containers ls -q "labels.\"io.kubernetes.pod.uid\"==\"$u\"" 2>/dev/null); do`, ctrListTimeoutSecs, ctr),
		fmt.Sprintf(`      bounded %d %s tasks kill -s KILL "$c" >/dev/null 2>&1 || true`, ctrKillTimeoutSecs, ctr),
		fmt.Sprintf(`      bounded %d %s tasks delete -f "$c" >/dev/null 2>&1 || true`, ctrDeleteTimeoutSecs, ctr),
		fmt.Sprintf(`      bounded %d %s containers delete "$c" >/dev/null 2>&1 || true`, ctrKillTimeoutSecs, ctr),
		`    done`,
		`  done`,
		`  set +f`,
		`fi`,
	}, "\n")
}
