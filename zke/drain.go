package zke

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
)

// drainReporter is what a drain tells the operation's log
// (*workflow.Reporter).
type drainReporter interface {
	Report(node, msg string)
	Warnf(node, format string, args ...any)
	waitReporter
}

// drainer takes a worker out of a cluster through the Kubernetes API.
type drainer struct {
	kube kubeclient.Interface
	rep  drainReporter
	// interval is the pause between two rounds of a drain.
	interval time.Duration
	// timeout bounds the whole drain of one node.
	timeout time.Duration
}

// drain cordons the node name, moves its pods off, and deletes its Node.
// While the node's kubelet reports (Ready True or False) its pods are
// evicted through the Eviction API, which respects PodDisruptionBudgets
// (a refused eviction is retried), and the drain waits until the kubelet
// has stopped them. When the kubelet has stopped reporting (Ready
// Unknown, or never reported) nobody would ever confirm a graceful
// deletion: its pods are force-deleted and the Node is deleted without
// waiting for them. A node that dies during the drain is switched to the
// second way. A kubelet that still reports is never bypassed, so a pod
// cannot end up running twice. The wait for the pods ends within
// d.timeout or when ctx ends; each API call is bounded by the client's
// timeout. A Node that is already gone is not an error.
func (d drainer) drain(ctx context.Context, name string) error {
	gone, err := d.evictAll(ctx, name)
	if err != nil || gone {
		return err
	}
	if err := d.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node: %w", err)
	}
	d.rep.Report(name, "drained and deleted from Kubernetes")
	return nil
}

// evictAll cordons the node name and moves its pods off, as drain says;
// it reports whether the Node was already gone.
func (d drainer) evictAll(ctx context.Context, name string) (bool, error) {
	nodes := d.kube.CoreV1().Nodes()
	patch := []byte(`{"spec":{"unschedulable":true}}`)
	if _, err := nodes.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			d.rep.Report(name, "no longer a Kubernetes node")
			return true, nil
		}
		return false, fmt.Errorf("cordon: %w", err)
	}
	d.rep.Report(name, "cordoned")
	forced := false
	err := pollEvery(ctx, waitOn{rep: d.rep, node: name}, d.interval, d.timeout, "pods of "+name+" evicted", func(ctx context.Context) (bool, error) {
		k, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("get node: %w", err)
		}
		list, err := d.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String()})
		if err != nil {
			return false, fmt.Errorf("list pods: %w", err)
		}
		pods := podsToDrain(name, list.Items)
		if gone, why := kubeletGone(k); gone {
			if !forced {
				d.rep.Warnf(name, "its kubelet no longer reports (%s): force-deleting its %d pods without waiting for it", why, len(pods))
			}
			forced = true
			err := d.forceDelete(ctx, pods)
			return err == nil, err
		}
		if len(pods) == 0 {
			return true, nil
		}
		return false, d.evict(ctx, name, pods)
	})
	if err != nil {
		hint := ""
		if errors.Is(err, errDisruptionBudget) {
			hint = "; a PodDisruptionBudget keeps a pod on it: relax the budget or scale its workload up, then retry"
		}
		return false, fmt.Errorf("%w%s", err, hint)
	}
	return false, nil
}

// evict asks the API server to evict every pod that is not terminating
// yet and returns why pods are still there.
func (d drainer) evict(ctx context.Context, name string, pods []corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		err := d.kube.CoreV1().Pods(p.Namespace).EvictV1(ctx, ev)
		switch {
		case err == nil || apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			errs = append(errs, fmt.Errorf("evict %s/%s: %w: %w", p.Namespace, p.Name, errDisruptionBudget, err))
		default:
			errs = append(errs, fmt.Errorf("evict %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(append([]error{fmt.Errorf("%d pods still on %s", len(pods), name)}, errs...)...)
}

// forceDelete deletes pods at once (grace period 0): their node's kubelet
// will never confirm a graceful deletion.
func (d drainer) forceDelete(ctx context.Context, pods []corev1.Pod) error {
	zero := int64(0)
	var errs []error
	for _, p := range pods {
		err := d.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("force-delete %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// kubeletGone reports whether k's kubelet has stopped reporting: its
// Ready condition is Unknown (the node controller's verdict when status
// updates stop) or it never reported at all; and says why.
func kubeletGone(k *corev1.Node) (bool, string) {
	for _, c := range k.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status != corev1.ConditionUnknown {
			return false, ""
		}
		why := "Ready=" + string(c.Status)
		if c.Reason != "" {
			why += ", " + c.Reason
		}
		return true, why
	}
	return true, "no Ready condition: its kubelet never reported"
}

// podsToDrain are the pods bound to node that a drain moves off: not the
// DaemonSet pods (their controller keeps one on every node and they go
// with the Node) nor the mirror pods of static pods (the kubelet owns
// them).
func podsToDrain(node string, pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != node || isDaemonOrMirror(p.OwnerReferences, p.Annotations) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func isDaemonOrMirror(owners []metav1.OwnerReference, ann map[string]string) bool {
	if _, ok := ann[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, o := range owners {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
