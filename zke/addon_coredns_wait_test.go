package zke

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

func dnsDeployment(gen, observed int64, updated, available int32) *appsv1.Deployment {
	return dnsRollout(gen, observed, updated, updated, available)
}

// dnsRollout is a one-replica CoreDNS deployment with replicas pods in
// all, updated of them of the current spec.
func dnsRollout(gen, observed int64, replicas, updated, available int32) *appsv1.Deployment {
	one := int32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: corednsName, Namespace: metav1.NamespaceSystem, Generation: gen},
		Spec:       appsv1.DeploymentSpec{Replicas: &one},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas,
			UpdatedReplicas: updated, AvailableReplicas: available},
	}
}

func TestDeploymentAvailable(t *testing.T) {
	tests := []struct {
		name string
		d    *appsv1.Deployment
		want bool
		why  string
	}{
		{"rolled out", dnsDeployment(2, 2, 1, 1), true, ""},
		{"spec not seen", dnsDeployment(3, 2, 1, 1), false, "not seen the latest spec"},
		{"rolling", dnsDeployment(2, 2, 0, 1), false, "0 of 1 replicas updated"},
		{"nothing available", dnsDeployment(1, 1, 1, 0), false, "0 of 1 updated replicas available"},
		// An update changed the image: the old pod still serves, the new
		// one cannot start.
		{"old pod hides a broken new one", dnsRollout(2, 2, 2, 1, 1), false, "1 old replicas still running"},
		{"new pod not available yet", dnsRollout(2, 2, 1, 1, 0), false, "0 of 1 updated replicas available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := deploymentAvailable(tt.d)
			if ok != tt.want || !strings.Contains(why, tt.why) {
				t.Fatalf("deploymentAvailable = %v, %q; want %v, %q", ok, why, tt.want, tt.why)
			}
		})
	}
}

func TestDescribePod(t *testing.T) {
	pod := func(node string, conds []corev1.PodCondition, cs ...corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "coredns-1"}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: conds, ContainerStatuses: cs}}
	}
	tests := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"unschedulable", pod("", []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available"}}),
			"pod coredns-1 unscheduled: Unschedulable 0/2 nodes are available"},
		{"image", pod("w1", nil, corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull access denied"}}}),
			"pod coredns-1 on w1: ErrImagePull pull access denied"},
		{"exited", pod("w1", nil, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}),
			"pod coredns-1 on w1: exited 1 (Error)"},
		{"not ready", pod("w1", nil, corev1.ContainerStatus{RestartCount: 4, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}),
			"pod coredns-1 on w1: running but not ready (restarts 4)"},
		{"no status yet", pod("w1", nil), "pod coredns-1 on w1: Pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describePod(tt.pod); got != tt.want {
				t.Fatalf("describePod = %q, want %q", got, tt.want)
			}
		})
	}
	if got := describeDNSPods(nil, nil); !strings.Contains(got, "no CoreDNS pod") {
		t.Errorf("describeDNSPods(nil) = %q", got)
	}
}

func TestWaitCoreDNS(t *testing.T) {
	r := &run{images: map[string]string{model.ImageCoreDNS: "coredns/coredns:1.12.1"}}
	ctx := context.Background()

	ready := fake.NewClientset(dnsDeployment(1, 1, 1, 1), dnsPod("coredns-a", true, time.Now().Add(-time.Hour), 0))
	if err := r.waitCoreDNS(ctx, nil, kubeclienttest.FromClientset(ready), 5*time.Second); err != nil {
		t.Fatalf("waitCoreDNS on an available deployment: %v", err)
	}

	stuck := fake.NewClientset(dnsDeployment(1, 1, 1, 0), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns-abc", Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec:       corev1.PodSpec{NodeName: "w2"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}},
	})
	// A pod whose sandbox cannot be created says why only in its events.
	sandbox := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns-def", Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec:       corev1.PodSpec{NodeName: "w3"},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	if _, err := stuck.CoreV1().Pods(metav1.NamespaceSystem).Create(ctx, sandbox, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, ev := range []corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Name: "e1"}, Type: corev1.EventTypeWarning, Reason: "FailedScheduling", Message: "old news", LastTimestamp: metav1.NewTime(base)},
		{ObjectMeta: metav1.ObjectMeta{Name: "e2"}, Type: corev1.EventTypeWarning, Reason: "FailedCreatePodSandBox", Message: "failed to pull image \"registry.k8s.io/pause:3.6\"", LastTimestamp: metav1.NewTime(base.Add(time.Minute))},
		{ObjectMeta: metav1.ObjectMeta{Name: "e3"}, Type: corev1.EventTypeNormal, Reason: "Scheduled", Message: "assigned", LastTimestamp: metav1.NewTime(base.Add(2 * time.Minute))},
	} {
		ev.Namespace = metav1.NamespaceSystem
		ev.InvolvedObject = corev1.ObjectReference{Kind: "Pod", Namespace: metav1.NamespaceSystem, Name: "coredns-def"}
		if _, err := stuck.CoreV1().Events(metav1.NamespaceSystem).Create(ctx, &ev, metav1.CreateOptions{}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	start := time.Now()
	err := r.waitCoreDNS(ctx, nil, kubeclienttest.FromClientset(stuck), 1500*time.Millisecond)
	if err == nil || time.Since(start) > 30*time.Second {
		t.Fatalf("waitCoreDNS on a stuck deployment = %v after %s", err, time.Since(start))
	}
	for _, want := range []string{"CoreDNS available", "0 of 1 updated replicas available", "pod coredns-abc on w2: ImagePullBackOff",
		`pod coredns-def on w3: Pending (last warning FailedCreatePodSandBox: failed to pull image "registry.k8s.io/pause:3.6")`,
		"coredns/coredns:1.12.1", "retry"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, workflow.ErrUserFixable) {
		t.Error("a stuck CoreDNS is not marked fixable by the user")
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.waitCoreDNS(cctx, nil, kubeclienttest.FromClientset(stuck), time.Minute); !errors.Is(err, context.Canceled) || errors.Is(err, workflow.ErrUserFixable) {
		t.Errorf("waitCoreDNS after cancel = %v, want the cancellation only", err)
	}
}
