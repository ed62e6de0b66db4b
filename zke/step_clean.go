package zke

import (
	"context"
	"fmt"
	"strings"

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
	rep.Report(n.Name, fmt.Sprintf("removed %d containers and zke's directories", len(before)))
	return nil
}

// cleanScript stops the pods the cluster's kubelet left in containerd
// (namespace k8s.io, when ctr is there), unmounts what the kubelet mounted
// under its directory, and deletes zke's files.
func cleanScript(n node) string {
	dirs := []string{n.dir(dirSSL), n.dir(dirKubernetes + "/kubelet-config.yaml"), n.dir(dirEtcdData), n.dir(dirKubelet), n.dir(dirPodLogs), n.dir(dirContainers)}
	quoted := make([]string, len(dirs))
	for i, d := range dirs {
		quoted[i] = shellQuote(d)
	}
	return strings.Join([]string{
		`if command -v ctr >/dev/null 2>&1; then`,
		`  a=` + shellQuote(n.ContainerdSocket),
		`  for t in $(ctr -a "$a" -n k8s.io tasks ls -q 2>/dev/null); do ctr -a "$a" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done`,
		`  sleep 1`,
		`  for t in $(ctr -a "$a" -n k8s.io tasks ls -q 2>/dev/null); do ctr -a "$a" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true; done`,
		`  for c in $(ctr -a "$a" -n k8s.io containers ls -q 2>/dev/null); do ctr -a "$a" -n k8s.io containers delete "$c" >/dev/null 2>&1 || true; done`,
		`fi`,
		`k=` + shellQuote(n.dir(dirKubelet)),
		`for m in $(awk -v k="$k" '$2 ~ "^"k"/" {print $2}' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done`,
		`rm -rf ` + strings.Join(quoted, " "),
		`rm -f ` + cniConfFile,
		`ip link del zke0 2>/dev/null || true`,
		`ip route flush proto ` + routeProto + ` 2>/dev/null || true`,
		`exit 0`,
	}, "\n")
}
