package zke

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// removedNodes are the nodes of the last applied configuration that cfg
// no longer has (matched by address): workers, and controlplane and etcd
// nodes that validation let go (never the API endpoint, never an etcd
// majority).
func (r *run) removedNodes() []node {
	st := r.snapshot()
	if st.Applied == nil {
		return nil
	}
	keep := map[string]bool{}
	for _, n := range r.nodes {
		keep[n.Address] = true
	}
	var out []node
	for _, n := range nodesOf(*st.Applied) {
		if !keep[n.Address] {
			out = append(out, n)
		}
	}
	return out
}

// drainRemoved takes every removed worker out of Kubernetes (see
// drainer.drain): evicted when it is Ready, its pods force-deleted when
// its kubelet is gone, its Node deleted either way.
func (r *run) drainRemoved(ctx context.Context, rep *workflow.Reporter) error {
	removed := r.removedNodes()
	if len(removed) == 0 {
		return nil
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	d := drainer{kube: kube, rep: rep, interval: pollInterval, timeout: drainTimeout}
	for _, n := range removed {
		if err := d.drain(ctx, n.Name); err != nil {
			return nodeErr(n, err, "")
		}
	}
	return nil
}

// cleanRemoved connects to every removed node and cleans it. A removed
// node that cannot be reached (it is dead, or was reinstalled) no longer
// belongs to the cluster either way: it is left as it is with a warning
// saying how to clean it by hand, and the update goes on.
func (r *run) cleanRemoved(ctx context.Context, rep *workflow.Reporter) error {
	removed := r.removedNodes()
	err := workflow.ForEach(ctx, removed, nodeConcurrency, func(ctx context.Context, n node) error {
		if err := r.connectNode(ctx, rep, n); err != nil {
			if ctx.Err() != nil {
				return err
			}
			rep.Warnf(n.Name, "cannot be reached (%v); left as it is; clean it by hand: %s", err, manualCleanup(r.cfg.Name, n, r.ownedPaths(n), r.podNetCleanup()))
			return nil
		}
		return r.cleanNode(ctx, rep, n)
	})
	if err != nil {
		return err
	}
	// Gone from the cluster: nothing found on them later is zke's.
	for _, n := range removed {
		r.disown(n)
	}
	// A removed control-plane node may have held the shared endpoint's
	// VIP: wait for a remaining one to take it over.
	if cps := withRole(r.nodes, model.RoleControlPlane); len(removed) > 0 && len(cps) > 0 {
		return r.endpointReady(ctx, rep, cps[0])
	}
	return nil
}

// manualCleanup says, in one line, what an admin runs on n to remove
// what zke put there (what cleanNode would have done): owned are the
// paths proven zke's on n, the only ones it names. Every path and label
// is shell-quoted: the line is meant to be pasted into a shell. When the
// pod network runs flanneld (pn) it removes flanneld's device, lease and
// host-gw routes too.
func manualCleanup(cluster string, n node, owned []string, pn podNetCleanup) string {
	parts := []string{fmt.Sprintf("docker rm -f $(docker ps -aq --filter %s --filter %s)",
		shellQuote("label="+runtime.LabelManaged+"=true"), shellQuote("label="+runtime.LabelCluster+"="+cluster))}
	if kubelet := n.dir(dirKubelet); slices.Contains(owned, kubelet) {
		parts = append(parts, fmt.Sprintf("in containerd (ctr -n k8s.io) kill and delete the containers labelled io.kubernetes.pod.uid=<the UID of each pod directory under %s>", shellQuote(kubelet+"/pods")),
			"umount what is mounted under "+shellQuote(kubelet))
	}
	if len(owned) > 0 {
		parts = append(parts, "rm -rf -- "+quoteAll(owned))
	}
	parts = append(parts, "ip link del zke0", "ip route flush proto "+routeProto, masqCleanup())
	if pn.Flannel {
		parts = append(parts, "ip link del "+flannelDevice, "ip link del "+flannelDevice6, "rm -f "+flannelSubnetEnv,
			hostGWRouteCleanup(pn.ClusterCIDR, pn.Gateways))
	}
	return strings.Join(parts, "; ")
}
