package clustermanager

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke"
)

// maxNamedNodes bounds how many not-Ready nodes a reason names.
const maxNamedNodes = 3

// dataPlaneProblem says what of a created cluster's data plane does not
// work, as its API server reports it, or "" when nothing is known to be
// wrong: nodes that are not Ready (their pods are not served), CoreDNS
// with no ready pod (no name resolves in the cluster), nodes where
// flanneld (which runs both pod networks) is not ready (their pods cannot
// reach other nodes' pods), and, on a bridge cluster whose routes an
// earlier release set, workers that rebooted since (likewise). /readyz said the API answers; known is false when a
// read failed, so that a slow answer neither makes a healthy cluster look
// broken nor clears what an earlier probe found. It reads from the API
// server's watch cache (resourceVersion "0").
func dataPlaneProblem(ctx context.Context, kube kubeclient.Interface, cfg *model.ClusterConfig) (problem string, known bool) {
	var problems []string
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return "", false
	}
	if p := notReadyNodes(nodes.Items); p != "" {
		problems = append(problems, p)
	}
	coredns := zke.CoreDNSNamespace + "/" + zke.CoreDNSDeployment
	d, err := kube.AppsV1().Deployments(zke.CoreDNSNamespace).Get(ctx, zke.CoreDNSDeployment, metav1.GetOptions{ResourceVersion: "0"})
	switch {
	case apierrors.IsNotFound(err):
		problems = append(problems, "CoreDNS is missing (deployment "+coredns+"): names do not resolve in the cluster; update the cluster to put it back")
	case err != nil:
		return "", false
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0:
		problems = append(problems, fmt.Sprintf("CoreDNS is not serving: it is scaled to 0 pods (kubectl -n %s scale deployment %s --replicas=1)", zke.CoreDNSNamespace, zke.CoreDNSDeployment))
	case d.Status.ReadyReplicas == 0:
		problems = append(problems, fmt.Sprintf("CoreDNS is not serving: none of its %d pods is ready (kubectl -n %s get pods -l %s)", d.Status.Replicas, zke.CoreDNSNamespace, zke.CoreDNSSelector))
	}
	if cfg != nil && cfg.Network.Plugin == model.PluginBridge {
		if p := rebootedBridgeWorkers(nodes.Items); p != "" {
			problems = append(problems, p)
		}
	}
	if cfg != nil && (cfg.Network.Plugin == model.PluginFlannel || cfg.Network.Plugin == model.PluginBridge) {
		flannel := zke.FlannelNamespace + "/" + zke.FlannelDaemonSet
		ds, err := kube.AppsV1().DaemonSets(zke.FlannelNamespace).Get(ctx, zke.FlannelDaemonSet, metav1.GetOptions{ResourceVersion: "0"})
		switch {
		case apierrors.IsNotFound(err) && cfg.Network.Plugin == model.PluginBridge && legacyBridgeRoutes(nodes.Items):
			// Routes set by an earlier release, which ran no flanneld
			// (rebootedBridgeWorkers judges them).
		case apierrors.IsNotFound(err):
			problems = append(problems, "flannel is missing (daemonset "+flannel+"): pods cannot reach other nodes' pods; update the cluster to put it back")
		case err != nil:
			return "", false
		case ds.Status.NumberReady < ds.Status.DesiredNumberScheduled:
			problems = append(problems, fmt.Sprintf("flannel is ready on %d of %d nodes: pods on the others cannot reach other nodes' pods (kubectl -n %s get pods -o wide)",
				ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, zke.FlannelNamespace))
		}
	}
	if len(problems) == 0 {
		return "", true
	}
	return "data plane: " + strings.Join(problems, "; "), true
}

// rebootedBridgeWorkers names the workers of a bridge cluster that
// rebooted since an earlier release set their pod routes and nat chain
// (their Node's bootID is not the one zke.PodRoutesBootAnnotation
// recorded), which no reboot keeps, at most maxNamedNodes of them, or "".
// A Node without the annotation (flanneld keeps its routes, or they were
// set before the annotation existed) is not judged.
func rebootedBridgeWorkers(nodes []corev1.Node) string {
	var named []string
	count := 0
	for _, n := range nodes {
		set, boot := n.Annotations[zke.PodRoutesBootAnnotation], n.Status.NodeInfo.BootID
		if set == "" || boot == "" || set == boot {
			continue
		}
		count++
		if len(named) < maxNamedNodes {
			named = append(named, n.Name)
		}
	}
	if count == 0 {
		return ""
	}
	who := "node " + named[0] + " rebooted"
	if count > 1 {
		who = fmt.Sprintf("%d nodes rebooted (%s)", count, strings.Join(named, ", "))
	}
	return who + " since its pod routes and nat chain were set, which the bridge network does not keep across a reboot: " +
		"its pods cannot reach other nodes' pods; update the cluster (send its configuration again): flanneld then keeps them"
}

// legacyBridgeRoutes says whether an earlier release set the pod routes
// of a bridge cluster, which ran no flanneld: one of its Nodes carries
// zke.PodRoutesBootAnnotation, which the network step removes once
// flanneld runs.
func legacyBridgeRoutes(nodes []corev1.Node) bool {
	for _, n := range nodes {
		if _, ok := n.Annotations[zke.PodRoutesBootAnnotation]; ok {
			return true
		}
	}
	return false
}

// notReadyNodes names the nodes whose Ready condition is not True, at
// most maxNamedNodes of them with the condition's reason, or "".
func notReadyNodes(nodes []corev1.Node) string {
	var named []string
	count := 0
	for _, n := range nodes {
		why := "no Ready condition"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				why = ""
				if c.Status != corev1.ConditionTrue {
					why = c.Reason
					if why == "" {
						why = string(c.Status)
					}
				}
			}
		}
		if why == "" {
			continue
		}
		count++
		if len(named) < maxNamedNodes {
			named = append(named, n.Name+" ("+why+")")
		}
	}
	switch {
	case count == 0:
		return ""
	case count > len(named):
		return fmt.Sprintf("%d nodes are not Ready: %s and %d more", count, strings.Join(named, ", "), count-len(named))
	case count == 1:
		return "node " + named[0] + " is not Ready"
	default:
		return "nodes " + strings.Join(named, ", ") + " are not Ready"
	}
}
