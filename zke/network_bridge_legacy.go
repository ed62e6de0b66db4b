package zke

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// What earlier releases' bridge network left on a worker, and how a
// cluster moves from it to flannel's host-gw backend (network_flannel.go).
//
// Those releases set each worker's routes to the other workers' pod CIDRs
// themselves (ip route replace … proto routeProto) and masqueraded in
// their own nat chain, masqChain, once, when the network step ran: no
// reboot kept them, and a rebooted worker's pods could not reach the
// others' until the cluster was updated. flanneld now keeps both. A
// worker of such a cluster carries PodRoutesBootAnnotation on its Node
// (the health's reboot check reads it); the network step, once flanneld
// leased the worker's pod CIDR, removes masqChain (flanneld's
// FLANNEL-POSTRTG masquerades the same traffic) and the annotation. The
// routes stay: flanneld adopts a route whose destination, gateway and
// device are its own (flannel's routeAdd compares no more), so pods keep
// reaching each other throughout; a delete flushes them by their proto.

// routeProto tags the routes earlier releases added, so that removal
// deletes exactly those (ip route flush proto 77).
const routeProto = "77"

// masqChain is earlier releases' chain in each worker's nat table: it
// masqueraded what the node's pods sent out of the cluster, and nothing
// they sent to a pod or service address.
const masqChain = "ZKE-MASQ"

// maxMasqJumps bounds the jumps to masqChain that clean-up deletes: zke
// added one, and a loop on a command that keeps succeeding must end.
const maxMasqJumps = 16

// masqCleanup removes masqChain and every jump to it, in both address
// families; it never fails. It is part of every node's clean-up and of
// migrateBridgeWorker.
func masqCleanup() string {
	return fmt.Sprintf(`for t in iptables ip6tables; do command -v "$t" >/dev/null 2>&1 || continue; `+
		`i=0; while [ "$i" -lt %[2]d ] && "$t" -w -t nat -D POSTROUTING -j %[1]s 2>/dev/null; do i=$((i+1)); done; `+
		`"$t" -w -t nat -F %[1]s 2>/dev/null; "$t" -w -t nat -X %[1]s 2>/dev/null; done; true`, masqChain, maxMasqJumps)
}

// migrateBridgeWorker removes from worker n what an earlier release's
// bridge network set that flanneld, which has leased n's pod CIDR by
// now, replaces: masqChain, and PodRoutesBootAnnotation on n's Node. Run
// again it changes nothing.
func migrateBridgeWorker(ctx context.Context, kube kubeclient.Interface, c *transport.Client, n node) error {
	if _, err := c.Exec(ctx, masqCleanup(), transport.ExecOptions{}); err != nil {
		return nodeErr(n, fmt.Errorf("remove the nat chain %s of an earlier release: %w", masqChain, err), "")
	}
	k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return nodeErr(n, fmt.Errorf("get node %s: %w", n.Name, err), "")
	}
	if _, ok := k.Annotations[PodRoutesBootAnnotation]; !ok {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{PodRoutesBootAnnotation: nil}}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return nodeErr(n, fmt.Errorf("remove the annotation %s from node %s: %w", PodRoutesBootAnnotation, n.Name, err), "")
	}
	return nil
}
