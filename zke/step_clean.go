package zke

import (
	"context"
	"fmt"
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
// of this cluster, the pods the cluster's kubelet started, zke's
// directories under the prefix, the bridge CNI config, the zke0 bridge
// and the routes tagged as zke's.
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
	if _, err := c.Exec(ctx, cleanScript(n), transport.ExecOptions{}); err != nil {
		return nodeErr(n, fmt.Errorf("remove zke's files: %w", err), "")
	}
	if r.sharedEndpoint() && n.HasRole(model.RoleControlPlane) {
		// keepalived killed with its container leaves the VIP on the
		// node's interface, where it would still answer for it.
		if _, err := c.Exec(ctx, dropVIPScript(r.cfg.ControlPlaneEndpoint.VIP), transport.ExecOptions{}); err != nil {
			return nodeErr(n, fmt.Errorf("remove the virtual IP: %w", err), "")
		}
	}
	rep.Report(n.Name, fmt.Sprintf("removed %d containers and zke's directories", len(before)))
	return nil
}

// zkeFiles are the files and directories zke writes under n's prefix.
func zkeFiles(n node) []string {
	return []string{n.dir(dirSSL), kubeletConfigFile(n), n.dir(dirEtcdData), n.dir(dirEtcdRestore), n.dir(dirKubeLB), n.dir(dirKubelet), n.dir(dirPodLogs), n.dir(dirContainers)}
}

// Bounds of the containerd commands of cleanScript, in seconds: listing
// and killing answer at once on a healthy containerd; deleting a task
// waits for its processes to exit after SIGKILL.
const (
	ctrListTimeoutSecs   = 10
	ctrKillTimeoutSecs   = 10
	ctrDeleteTimeoutSecs = 30
)

// cleanScript stops the pods the cluster's kubelet ran in containerd,
// unmounts what the kubelet mounted under its directory (unmountUnder),
// and deletes zke's files, every path shell-quoted. Of containerd's containers only this kubelet's pods are touched
// (see podContainersCleanup); whatever else runs in containerd stays.
func cleanScript(n node) string {
	dirs := zkeFiles(n)
	quoted := make([]string, len(dirs))
	for i, d := range dirs {
		quoted[i] = shellQuote(d)
	}
	lines := []string{
		`k=` + shellQuote(n.dir(dirKubelet)),
		`l=` + shellQuote(n.dir(dirPodLogs)),
		podContainersCleanup(n.ContainerdSocket),
		unmountUnder("k", "/proc/mounts"),
		`rm -rf ` + strings.Join(quoted, " "),
		`rm -f ` + cniConfFile,
		`ip link del zke0 2>/dev/null || true`,
		`ip route flush proto ` + routeProto + ` 2>/dev/null || true`,
		`exit 0`,
	}
	return strings.Join(lines, "\n")
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
// kubelet's directory, is set by the caller) and the pod log directories
// "$l"/<namespace>_<name>_<uid> (l likewise), which outlive a deleted
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
		`  uids=$( { for d in "$k"/pods/*/; do [ -d "$d" ] && basename "$d"; done; for d in "$l"/*_*/; do [ -d "$d" ] && { d=${d%/}; echo "${d##*_}"; }; done; } | sort -u)`,
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
