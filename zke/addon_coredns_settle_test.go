package zke

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest"
)

// dnsPod is a CoreDNS pod, Ready (since readySince) or not, with restarts.
func dnsPod(name string, ready bool, readySince time.Time, restarts int32) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec:       corev1.PodSpec{NodeName: "w1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(readySince)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "coredns", Ready: ready, RestartCount: restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

func TestSettleCoreDNS(t *testing.T) {
	r := &run{}
	ctx := context.Background()
	const settle = 300 * time.Millisecond
	tests := []struct {
		name    string
		pods    []runtime.Object
		restart bool // each list sees one more restart
		wantErr error
		has     string
		minTime time.Duration
	}{
		{"ready for long", []runtime.Object{dnsPod("coredns-a", true, time.Now().Add(-time.Hour), 3)}, false, nil, "", 0},
		{"ready just now", []runtime.Object{dnsPod("coredns-a", true, time.Now(), 0)}, false, nil, "", settle},
		{"crash-looping", []runtime.Object{dnsPod("coredns-a", true, time.Now(), 0)}, true, errCoreDNSCrashing, "its log says fake logs", 0},
		{"never ready", []runtime.Object{dnsPod("coredns-a", false, time.Now(), 0)}, false, context.DeadlineExceeded, "running but not ready", 0},
		{"no pod", nil, false, context.DeadlineExceeded, "no CoreDNS pod exists", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.pods...)
			if tt.restart {
				var n atomic.Int32
				cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
					p := dnsPod("coredns-a", true, time.Now(), n.Add(1))
					return true, &corev1.PodList{Items: []corev1.Pod{*p}}, nil
				})
			}
			start := time.Now()
			err := r.settleCoreDNS(ctx, nil, kubeclienttest.FromClientset(cs), 3*time.Second, settle)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("settleCoreDNS = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.has) {
				t.Errorf("error %q lacks %q", err, tt.has)
			}
			if d := time.Since(start); d < tt.minTime {
				t.Errorf("settled after %s, before %s", d, tt.minTime)
			}
		})
	}
}

func TestPickLogLine(t *testing.T) {
	tests := []struct{ name, log, want string }{
		{"loop", "[INFO] plugin/reload: Running configuration SHA512 = 1\n[FATAL] plugin/loop: Loop (127.0.0.1:55 -> :53) detected for zone \".\"\n",
			`[FATAL] plugin/loop: Loop (127.0.0.1:55 -> :53) detected for zone "."`},
		{"error then info", "[ERROR] plugin/errors: 2 x. A: read udp: i/o timeout\n[INFO] still here\n\n", "[ERROR] plugin/errors: 2 x. A: read udp: i/o timeout"},
		{"only info", "[INFO] a\n[INFO] b\n", "[INFO] b"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pickLogLine(strings.NewReader(tt.log)); got != tt.want {
				t.Errorf("pickLogLine = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCoreDNSReadinessProbe(t *testing.T) {
	p := corednsReadinessProbe()
	if p.HTTPGet == nil || p.HTTPGet.Path != "/ready" || p.HTTPGet.Port.IntValue() != corednsReadyPort || p.PeriodSeconds != 10 {
		t.Errorf("probe %+v", p)
	}
	if corednsSettle != 2*time.Duration(p.PeriodSeconds)*time.Second {
		t.Errorf("settle %s is not two probe periods", corednsSettle)
	}
}
