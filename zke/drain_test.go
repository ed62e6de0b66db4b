package zke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest"
)

func TestKubeletGone(t *testing.T) {
	cond := func(s corev1.ConditionStatus, reason string) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: s, Reason: reason},
		}}}
	}
	tests := []struct {
		name string
		node *corev1.Node
		gone bool
		why  string
	}{
		{"ready", cond(corev1.ConditionTrue, "KubeletReady"), false, ""},
		{"kubelet stopped posting", cond(corev1.ConditionUnknown, "NodeStatusUnknown"), true, "Ready=Unknown, NodeStatusUnknown"},
		// A kubelet that reports NotReady still confirms deletions.
		{"not ready but reporting", cond(corev1.ConditionFalse, "KubeletNotReady"), false, ""},
		{"never reported", &corev1.Node{}, true, "no Ready condition"},
	}
	for _, tt := range tests {
		gone, why := kubeletGone(tt.node)
		if gone != tt.gone || !strings.Contains(why, tt.why) {
			t.Errorf("%s: kubeletGone = %v %q, want %v %q", tt.name, gone, why, tt.gone, tt.why)
		}
	}
}

func testPod(ns, name, nodeName string, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: nodeName}}
	for _, m := range mut {
		m(p)
	}
	return p
}

func daemonSetPod(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds"}}
}

func mirrorPod(p *corev1.Pod) {
	p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
}

func TestPodsToDrain(t *testing.T) {
	pods := []corev1.Pod{
		*testPod("default", "app", "w1"),
		*testPod("default", "job", "w1", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs"}}
		}),
		*testPod("kube-system", "ds", "w1", daemonSetPod),
		*testPod("kube-system", "static", "w1", mirrorPod),
		*testPod("default", "elsewhere", "w2"),
	}
	var got []string
	for _, p := range podsToDrain("w1", pods) {
		got = append(got, p.Name)
	}
	if strings.Join(got, ",") != "app,job" {
		t.Errorf("podsToDrain = %v, want app,job", got)
	}
}

// drainLog records what a drain reports.
type drainLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *drainLog) Report(node, msg string) { l.add(node + ": " + msg) }

// Waiting ignores what the drain waits for (the drain's log is tested).
func (l *drainLog) Waiting(node, what string, lastErr error) {}
func (l *drainLog) Warnf(node, format string, args ...any) {
	l.add("warn " + node + ": " + fmt.Sprintf(format, args...))
}
func (l *drainLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}
func (l *drainLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func testNode(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

// evictions makes the fake API server answer evictions: refused with 429
// (a PodDisruptionBudget) for the first refusals calls, then granted
// (the pod is deleted, as a kubelet would confirm at once).
func evictions(c *fake.Clientset, refusals int) *int {
	var calls int
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		calls++
		if calls <= refusals {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		name := a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName()
		return true, nil, c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), name)
	})
	return &calls
}

func TestDrain(t *testing.T) {
	tests := []struct {
		name      string
		objects   []runtime.Object
		refusals  int
		timeout   time.Duration
		wantErr   error // nil: the drain succeeds
		wantLog   string
		wantForce bool // pods deleted with grace period 0
		wantLeft  []string
	}{
		{
			name: "ready node: pods evicted after the disruption budget allows it",
			objects: []runtime.Object{testNode("w1", corev1.ConditionTrue), testPod("default", "app", "w1"),
				testPod("kube-system", "ds", "w1", daemonSetPod), testPod("default", "other", "w2")},
			refusals: 2, timeout: 5 * time.Second,
			wantLog: "w1: drained and deleted from Kubernetes", wantLeft: []string{"ds", "other"},
		},
		{
			name:     "ready node: a budget that never allows it ends the drain in time",
			objects:  []runtime.Object{testNode("w1", corev1.ConditionTrue), testPod("default", "app", "w1")},
			refusals: 1 << 30, timeout: 200 * time.Millisecond,
			wantErr: errDisruptionBudget, wantLeft: []string{"app"},
		},
		{
			// Its kubelet still reports: it confirms graceful deletions,
			// so nothing is forced.
			name:    "NotReady node that reports: pods evicted, not forced",
			objects: []runtime.Object{testNode("w1", corev1.ConditionFalse), testPod("default", "app", "w1")},
			timeout: 5 * time.Second,
			wantLog: "w1: drained and deleted from Kubernetes",
		},
		{
			name: "dead node: pods force-deleted, no wait for its kubelet",
			objects: []runtime.Object{testNode("w1", corev1.ConditionUnknown),
				testPod("default", "app", "w1", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now; p.Finalizers = []string{"x"} }),
				testPod("default", "web", "w1")},
			refusals: 1 << 30, timeout: 5 * time.Second,
			wantLog: "warn w1: its kubelet no longer reports (Ready=Unknown): force-deleting its 2 pods", wantForce: true,
		},
		{
			name:    "node already gone",
			objects: []runtime.Object{testPod("default", "other", "w2")},
			timeout: time.Second, wantLog: "w1: no longer a Kubernetes node", wantLeft: []string{"other"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientset(tt.objects...)
			evictions(c, tt.refusals)
			log := &drainLog{}
			d := drainer{kube: kubeclienttest.FromClientset(c), rep: log, interval: 10 * time.Millisecond, timeout: tt.timeout}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err := d.drain(ctx, "w1")
			if elapsed := time.Since(start); elapsed > tt.timeout+time.Second {
				t.Errorf("drain took %s, bound %s", elapsed, tt.timeout)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("drain: %v\nlog:\n%s", err, log)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("drain err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(log.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, log)
			}
			_, getErr := c.CoreV1().Nodes().Get(ctx, "w1", metav1.GetOptions{})
			if deleted := apierrors.IsNotFound(getErr); deleted != (tt.wantErr == nil) {
				t.Errorf("node deleted = %v (%v), want %v", deleted, getErr, tt.wantErr == nil)
			}
			pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, p := range pods.Items {
				left = append(left, p.Name)
			}
			slices.Sort(left)
			if strings.Join(left, ",") != strings.Join(tt.wantLeft, ",") {
				t.Errorf("pods left %v, want %v", left, tt.wantLeft)
			}
			forced := false
			for _, a := range c.Actions() {
				if del, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "pods" {
					g := del.GetDeleteOptions().GracePeriodSeconds
					forced = g != nil && *g == 0
				}
			}
			if forced != tt.wantForce {
				t.Errorf("force-deleted = %v, want %v", forced, tt.wantForce)
			}
		})
	}
}

// A node whose kubelet dies during the drain keeps its evicted pods
// terminating: the drain notices the node turned NotReady and forces.
func TestDrainNodeDiesMidway(t *testing.T) {
	c := fake.NewClientset(testNode("w1", corev1.ConditionTrue), testPod("default", "app", "w1"))
	var evicted int
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		evicted++
		// Granted, but nobody confirms: the pod stays, terminating,
		// and the node controller marks the node Unknown.
		obj, err := c.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "default", "app")
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod)
		now := metav1.Now()
		p.DeletionTimestamp = &now
		if err := c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "default"); err != nil {
			return true, nil, err
		}
		return true, nil, c.Tracker().Update(corev1.SchemeGroupVersion.WithResource("nodes"), testNode("w1", corev1.ConditionUnknown), "")
	})
	log := &drainLog{}
	d := drainer{kube: kubeclienttest.FromClientset(c), rep: log, interval: 10 * time.Millisecond, timeout: 5 * time.Second}
	if err := d.drain(context.Background(), "w1"); err != nil {
		t.Fatalf("drain: %v\n%s", err, log)
	}
	if evicted != 1 {
		t.Errorf("%d evictions, want 1", evicted)
	}
	if !strings.Contains(log.String(), "force-deleting its 1 pods") {
		t.Errorf("log:\n%s", log)
	}
	if pods, _ := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("pods left: %v", pods.Items)
	}
}

func TestDrainHonoursCancel(t *testing.T) {
	c := fake.NewClientset(testNode("w1", corev1.ConditionTrue), testPod("default", "app", "w1"))
	evictions(c, 1<<30)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	d := drainer{kube: kubeclienttest.FromClientset(c), rep: &drainLog{}, interval: 10 * time.Millisecond, timeout: time.Minute}
	start := time.Now()
	err := d.drain(ctx, "w1")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("drain after cancel = %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("drain took %s after cancel", time.Since(start))
	}
}
