package zke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// waitCoreDNS waits, up to timeout, until the CoreDNS Deployment has
// rolled out, its pods have stayed Ready without a restart and it has
// answered a query (settleCoreDNS): a cluster whose pods cannot resolve
// names is not ready for use. On timeout the error
// says what each CoreDNS pod is stuck on (unschedulable, image not
// pulled, crashing) and what to do.
func (r *run) waitCoreDNS(ctx context.Context, rep waitReporter, kube kubeclient.Interface, timeout time.Duration) error {
	deployments := kube.AppsV1().Deployments(metav1.NamespaceSystem)
	err := poll(ctx, waitOn{rep: rep}, timeout, "CoreDNS available", func(ctx context.Context) (bool, error) {
		d, err := deployments.Get(ctx, corednsName, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("get deployment %s: %w", corednsName, err)
		}
		if ok, why := deploymentAvailable(d); !ok {
			return false, errors.New(why)
		}
		return true, nil
	})
	if err == nil {
		err = r.settleCoreDNS(ctx, rep, kube, timeout, corednsSettle)
	}
	if err == nil || ctx.Err() != nil {
		return err
	}
	pods, lerr := kube.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if lerr != nil {
		return fmt.Errorf("%w (listing its pods: %v)", err, lerr)
	}
	warnings := map[string]string{}
	for _, p := range pods.Items {
		warnings[p.Name] = lastWarning(ctx, kube, p)
	}
	return workflow.UserFixable(fmt.Errorf("%w: %s: fix what the pods wait on, then retry (if image %s cannot be pulled, "+
		"configure a private registry or set imageArchive; a sandbox image must be in the nodes' containerd, see its sandbox_image)",
		err, describeDNSPods(pods.Items, warnings), r.images[model.ImageCoreDNS]))
}

// lastWarning is the newest Warning event of pod p ("reason: message"),
// or "" when there is none or the events cannot be read: a pod stuck
// before any container exists (its sandbox cannot be created) says why
// only there.
func lastWarning(ctx context.Context, kube kubeclient.Interface, p corev1.Pod) string {
	evs, err := kube.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.name", p.Name),
			fields.OneTermEqualSelector("type", corev1.EventTypeWarning)).String(),
	})
	if err != nil {
		return ""
	}
	var last *corev1.Event
	for i := range evs.Items {
		e := &evs.Items[i]
		if e.Type != corev1.EventTypeWarning || e.InvolvedObject.Name != p.Name {
			continue
		}
		if last == nil || eventTime(e).After(eventTime(last)) {
			last = e
		}
	}
	if last == nil {
		return ""
	}
	return last.Reason + ": " + strings.TrimSpace(last.Message)
}

// eventTime is when e last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// deploymentAvailable reports whether d's current generation has rolled
// out, as `kubectl rollout status` judges it (every replica updated, no
// old one left, every updated one available), and otherwise why not. An
// old replica still serving does not count: it hides a new one that
// cannot start.
func deploymentAvailable(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.ObservedGeneration < d.Generation:
		return false, "the deployment controller has not seen the latest spec yet"
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas still running", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas || st.AvailableReplicas < 1:
		return false, fmt.Sprintf("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)
	}
	return true, ""
}

// describeDNSPods says, pod by pod, why CoreDNS does not run, with each
// pod's last warning (by pod name) when it has one.
func describeDNSPods(pods []corev1.Pod, warnings map[string]string) string {
	if len(pods) == 0 {
		return "no CoreDNS pod exists (check kube-controller-manager)"
	}
	var parts []string
	for _, p := range pods {
		d := describePod(p)
		if w := warnings[p.Name]; w != "" {
			d += " (last warning " + w + ")"
		}
		parts = append(parts, d)
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// describePod is one pod's state in a phrase: where it is and what it
// waits on.
func describePod(p corev1.Pod) string {
	where := "unscheduled"
	if p.Spec.NodeName != "" {
		where = "on " + p.Spec.NodeName
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("pod %s %s: %s %s", p.Name, where, c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			return fmt.Sprintf("pod %s %s: %s %s", p.Name, where, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		case cs.State.Terminated != nil:
			return fmt.Sprintf("pod %s %s: exited %d (%s)", p.Name, where, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		case !cs.Ready:
			return fmt.Sprintf("pod %s %s: running but not ready (restarts %d)", p.Name, where, cs.RestartCount)
		}
	}
	return fmt.Sprintf("pod %s %s: %s", p.Name, where, p.Status.Phase)
}
