package zke

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// removedNodes are the nodes of the last applied configuration that cfg
// no longer has (matched by address). Validation allows only workers.
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

// drainRemoved cordons every removed worker, evicts its pods (DaemonSet
// and mirror pods excepted), waits until they are gone, and deletes its
// Node.
func (r *run) drainRemoved(ctx context.Context, rep *workflow.Reporter) error {
	removed := r.removedNodes()
	if len(removed) == 0 {
		return nil
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	for _, n := range removed {
		k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nodeErr(n, fmt.Errorf("get node: %w", err), "")
		}
		if !k.Spec.Unschedulable {
			k.Spec.Unschedulable = true
			if _, err := kube.CoreV1().Nodes().Update(ctx, k, metav1.UpdateOptions{}); err != nil {
				return nodeErr(n, fmt.Errorf("cordon: %w", err), "")
			}
		}
		rep.Report(n.Name, "cordoned")
		sel := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()}
		err = poll(ctx, drainTimeout, "pods of "+n.Name+" evicted", func(ctx context.Context) (bool, error) {
			pods, err := kube.CoreV1().Pods("").List(ctx, sel)
			if err != nil {
				return false, err
			}
			left := 0
			for _, p := range pods.Items {
				if isDaemonOrMirror(p.OwnerReferences, p.Annotations) {
					continue
				}
				left++
				if p.DeletionTimestamp == nil {
					if err := kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
						return false, err
					}
				}
			}
			if left > 0 {
				return false, fmt.Errorf("%d pods still on %s", left, n.Name)
			}
			return true, nil
		})
		if err != nil {
			return nodeErr(n, err, "")
		}
		if err := kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nodeErr(n, fmt.Errorf("delete node: %w", err), "")
		}
		rep.Report(n.Name, "drained and deleted from Kubernetes")
	}
	return nil
}

func isDaemonOrMirror(owners []metav1.OwnerReference, ann map[string]string) bool {
	if _, ok := ann["kubernetes.io/config.mirror"]; ok {
		return true
	}
	for _, o := range owners {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// cleanRemoved connects to every removed node and cleans it.
func (r *run) cleanRemoved(ctx context.Context, rep *workflow.Reporter) error {
	removed := r.removedNodes()
	return workflow.ForEach(ctx, removed, nodeConcurrency, func(ctx context.Context, n node) error {
		if err := r.connectNode(ctx, rep, n); err != nil {
			return err
		}
		return r.cleanNode(ctx, rep, n)
	})
}
