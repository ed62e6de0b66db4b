package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Node names of the status entries that are not nodes.
const (
	nodeUnscheduled = "(unscheduled)"
	nodeMissing     = "(missing)"
)

// Labels and annotations the Deployment controller sets.
const (
	annotationRevision = "deployment.kubernetes.io/revision"
	labelTemplateHash  = appsv1.DefaultDeploymentUniqueLabelKey // "pod-template-hash"
)

// GetApplicationStatus reads app's Deployments (in every namespace), their
// ReplicaSets and pods, and computes the health levels with
// computeStatus: only pods of each Deployment's current pod template count,
// and a pod is ready once its Ready condition has been true for MinReady.
// An application with no Deployment has no versions and level 0, so that
// "nothing runs" never reads as healthy.
func (o *operator) GetApplicationStatus(ctx context.Context, app string) (*model.ApplicationStatus, error) {
	cs, err := o.clientset()
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", app, err)
	}
	sel := metav1.ListOptions{LabelSelector: appSelector(app)}
	deps, err := cs.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, o.apiError(err, "status of %s: list deployments", app)
	}
	if len(deps.Items) == 0 {
		return computeStatus(app, nil, nil, nil, o.clock(), o.minReady), nil
	}
	// The Deployment controller copies the pod template's labels, ours
	// included, onto the ReplicaSets it makes.
	rss, err := cs.AppsV1().ReplicaSets(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, o.apiError(err, "status of %s: list replicasets", app)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return nil, o.apiError(err, "status of %s: list pods", app)
	}
	return computeStatus(app, deps.Items, rss.Items, pods.Items, o.clock(), o.minReady), nil
}

// computeStatus is the status of app from its Deployments, ReplicaSets and
// pods at now: one VersionStatus per Deployment, sorted by version, each
// with its share of all desired replicas; the overall level is the ready
// share of all desired replicas, and 0 when there is no Deployment.
func computeStatus(app string, deps []appsv1.Deployment, rss []appsv1.ReplicaSet, pods []corev1.Pod, now time.Time, minReady time.Duration) *model.ApplicationStatus {
	st := &model.ApplicationStatus{App: app, Versions: make([]model.VersionStatus, 0, len(deps))}
	if len(deps) == 0 {
		return st
	}
	sorted := make([]*appsv1.Deployment, len(deps))
	for i := range deps {
		sorted[i] = &deps[i]
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		vi, vj := versionOf(sorted[i]), versionOf(sorted[j])
		if vi != vj {
			return vi < vj
		}
		return sorted[i].Namespace < sorted[j].Namespace
	})
	var desired, ready int
	for _, dep := range sorted {
		vs := versionStatus(dep, rss, pods, now, minReady)
		desired += vs.Desired
		ready += vs.Ready
		st.Versions = append(st.Versions, vs)
	}
	for i := range st.Versions {
		if desired > 0 {
			st.Versions[i].Percent = float64(st.Versions[i].Desired) / float64(desired) * 100
		}
	}
	st.Healthy.Level = model.Level(ready, desired)
	return st
}

// versionOf is the version a Deployment runs (its name if unlabelled).
func versionOf(dep *appsv1.Deployment) string {
	if v := dep.Labels[LabelVersion]; v != "" {
		return v
	}
	return dep.Name
}

// versionStatus is one Deployment's health, without its Percent: desired
// is spec.replicas; ready counts the ready pods of the current template,
// at most desired; nodes group those pods by node, plus a "(missing)"
// entry for the replicas not created yet.
func versionStatus(dep *appsv1.Deployment, rss []appsv1.ReplicaSet, pods []corev1.Pod, now time.Time, minReady time.Duration) model.VersionStatus {
	desired := 1 // the API server's default for an unset spec.replicas
	if dep.Spec.Replicas != nil {
		desired = int(*dep.Spec.Replicas)
	}
	current := currentPods(dep, currentReplicaSet(dep, rss), pods)

	byNode := map[string][]*corev1.Pod{}
	for _, p := range current {
		node := p.Spec.NodeName
		if node == "" {
			node = nodeUnscheduled
		}
		byNode[node] = append(byNode[node], p)
	}
	vs := model.VersionStatus{Version: versionOf(dep), Desired: desired, Nodes: make([]model.NodeStatus, 0, len(byNode)+1)}
	for node, ps := range byNode {
		ns := model.NodeStatus{Node: node, Desired: len(ps)}
		for _, p := range ps {
			if podReady(p, now, minReady) {
				ns.Ready++
			} else if ns.Reason == "" {
				ns.Reason = podReason(p, now, minReady)
			}
		}
		ns.Healthy.Level = model.Level(ns.Ready, ns.Desired)
		vs.Ready += ns.Ready
		vs.Nodes = append(vs.Nodes, ns)
	}
	vs.Ready = min(vs.Ready, desired)
	if vs.Ready < desired && len(current) < desired {
		short := desired - len(current)
		vs.Nodes = append(vs.Nodes, model.NodeStatus{Node: nodeMissing, Desired: short, Healthy: model.HealthInfo{Level: model.Level(0, short)}, Reason: "not created yet"})
	}
	sort.Slice(vs.Nodes, func(i, j int) bool { return vs.Nodes[i].Node < vs.Nodes[j].Node })
	vs.Healthy.Level = model.Level(vs.Ready, desired)
	return vs
}

// currentReplicaSet is the ReplicaSet of dep's current pod template, by
// kubectl rollout status' rule: the one dep controls whose revision is
// dep's. It is nil while the Deployment controller has not yet seen dep's
// latest spec (until then the revision still names the previous template,
// whose pods must not count) or has not made the ReplicaSet.
func currentReplicaSet(dep *appsv1.Deployment, rss []appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if dep.Status.ObservedGeneration < dep.Generation {
		return nil
	}
	rev := dep.Annotations[annotationRevision]
	if rev == "" {
		return nil
	}
	for i := range rss {
		rs := &rss[i]
		if rs.Namespace == dep.Namespace && metav1.IsControlledBy(rs, dep) && rs.Annotations[annotationRevision] == rev {
			return rs
		}
	}
	return nil
}

// currentPods are the live pods of rs (by its pod-template-hash, within
// dep's selector), sorted by name; none when rs is nil. Terminating and
// finished pods are left out, as the ReplicaSet controller does: they are
// being replaced.
func currentPods(dep *appsv1.Deployment, rs *appsv1.ReplicaSet, pods []corev1.Pod) []*corev1.Pod {
	if rs == nil || rs.Labels[labelTemplateHash] == "" {
		return nil
	}
	sel := labels.Everything()
	if dep.Spec.Selector != nil {
		if s, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector); err == nil {
			sel = s
		}
	}
	hash := rs.Labels[labelTemplateHash]
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.Namespace != dep.Namespace || p.Labels[labelTemplateHash] != hash || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// readyCondition is the pod's Ready condition, nil when it has none.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podReady says whether p's Ready condition has been true for at least
// minReady at now (a condition with no transition time has not).
func podReady(p *corev1.Pod, now time.Time, minReady time.Duration) bool {
	c := readyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReady <= 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Add(minReady).After(now)
}

// podReason says why p is not ready: the first not-ready container's
// waiting reason and message, or how it last exited; else the pod's own
// reason, its scheduling or readiness condition, or its phase.
func podReason(p *corev1.Pod, now time.Time, minReady time.Duration) string {
	if c := readyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		if c.LastTransitionTime.IsZero() {
			return "ready since an unknown time"
		}
		return fmt.Sprintf("ready for %s, counts after %s", now.Sub(c.LastTransitionTime.Time).Round(time.Second), minReady)
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if cs.Ready {
			continue
		}
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return join(w.Reason, w.Message)
		}
		if t := cs.State.Terminated; t != nil {
			return exitText(t)
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			return exitText(t)
		}
		break
	}
	if p.Status.Reason != "" {
		return join(p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return join(c.Reason, c.Message)
		}
	}
	if c := readyCondition(p); c != nil && c.Reason != "" {
		return join(c.Reason, c.Message)
	}
	if p.Status.Phase == "" {
		return "pod has no status yet"
	}
	return "pod " + string(p.Status.Phase)
}

// exitText describes a container's termination.
func exitText(t *corev1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exited with code %d", t.ExitCode)
	if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
		s += " (" + t.Reason + ")"
	}
	return s
}

// join is "reason: message", or whichever is not empty.
func join(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}
