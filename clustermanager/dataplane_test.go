package clustermanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke"
)

func TestDataPlaneProblem(t *testing.T) {
	node := func(name string, ready corev1.ConditionStatus, reason string) runtime.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: ready, Reason: reason}}}}
	}
	coredns := func(ready int32) runtime.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
			Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: ready}}
	}
	flannel := func(ready, desired int32) runtime.Object {
		return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-flannel-ds", Namespace: "kube-flannel"},
			Status: appsv1.DaemonSetStatus{NumberReady: ready, DesiredNumberScheduled: desired}}
	}
	booted := func(name, routesSet, boot string) runtime.Object {
		n := node(name, "True", "").(*corev1.Node)
		if routesSet != "" {
			n.Annotations = map[string]string{zke.PodRoutesBootAnnotation: routesSet}
		}
		n.Status.NodeInfo.BootID = boot
		return n
	}
	flannelCfg := &model.ClusterConfig{Network: model.Network{Plugin: model.PluginFlannel}}
	bridgeCfg := &model.ClusterConfig{Network: model.Network{Plugin: model.PluginBridge}}
	for _, tc := range []struct {
		name    string
		cfg     *model.ClusterConfig
		objects []runtime.Object
		want    []string // "" alone: no problem
	}{
		{"healthy flannel cluster", flannelCfg, []runtime.Object{node("n1", "True", ""), node("n2", "True", ""), coredns(1), flannel(2, 2)}, []string{""}},
		{"healthy bridge cluster", bridgeCfg, []runtime.Object{node("n1", "True", ""), coredns(1), flannel(1, 1)}, []string{""}},
		{"a node not Ready", bridgeCfg, []runtime.Object{node("n1", "True", ""), node("n2", "False", "KubeletNotReady"), coredns(1)},
			[]string{"data plane: node n2 (KubeletNotReady) is not Ready"}},
		{"five nodes not Ready", bridgeCfg, []runtime.Object{node("a", "Unknown", "NodeStatusUnknown"), node("b", "Unknown", ""), node("c", "False", "x"),
			node("d", "False", "y"), node("e", "False", "z"), coredns(1)}, []string{"5 nodes are not Ready: a (NodeStatusUnknown), b (Unknown), c (x) and 2 more"}},
		{"CoreDNS not serving", bridgeCfg, []runtime.Object{node("n1", "True", ""), coredns(0)}, []string{"CoreDNS is not serving: none of its 1 pods is ready"}},
		{"CoreDNS scaled to 0", bridgeCfg, []runtime.Object{node("n1", "True", ""), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: "kube-system"},
			Spec: appsv1.DeploymentSpec{Replicas: new(int32)}}}, []string{"CoreDNS is not serving: it is scaled to 0 pods"}},
		{"CoreDNS missing", bridgeCfg, []runtime.Object{node("n1", "True", "")}, []string{"CoreDNS is missing", "update the cluster"}},
		{"flannel on one of two", flannelCfg, []runtime.Object{node("n1", "True", ""), coredns(1), flannel(1, 2)}, []string{"flannel is ready on 1 of 2 nodes"}},
		{"flannel missing", flannelCfg, []runtime.Object{node("n1", "True", ""), coredns(1)}, []string{"flannel is missing"}},
		{"flannel on one of two of a bridge cluster", bridgeCfg, []runtime.Object{node("n1", "True", ""), coredns(1), flannel(1, 2)}, []string{"flannel is ready on 1 of 2 nodes"}},
		{"a bridge cluster whose routes an earlier release set runs no flannel", bridgeCfg, []runtime.Object{booted("n1", "b1", "b1"), coredns(1)}, []string{""}},
		{"flannel missing from a bridge cluster", bridgeCfg, []runtime.Object{node("n1", "True", ""), coredns(1)}, []string{"flannel is missing"}},
		{"bridge workers in the boot their routes were set in", bridgeCfg, []runtime.Object{booted("n1", "b1", "b1"), booted("n2", "", "b9"), coredns(1)}, []string{""}},
		{"a bridge worker rebooted", bridgeCfg, []runtime.Object{booted("n1", "b1", "b1"), booted("n2", "b2", "b3"), coredns(1)},
			[]string{"node n2 rebooted since its pod routes", "cannot reach other nodes' pods", "update the cluster"}},
		{"two bridge workers rebooted", bridgeCfg, []runtime.Object{booted("n1", "b1", "b4"), booted("n2", "b2", "b3"), coredns(1)},
			[]string{"2 nodes rebooted (n1, n2)"}},
		{"a reboot does not matter to flannel, which restores its routes", flannelCfg, []runtime.Object{booted("n1", "b1", "b4"), coredns(1), flannel(1, 1)}, []string{""}},
		{"everything at once", flannelCfg, []runtime.Object{node("n1", "False", "KubeletNotReady"), coredns(0), flannel(0, 1)},
			[]string{"node n1", "CoreDNS is not serving", "flannel is ready on 0 of 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, known := dataPlaneProblem(context.Background(), kubeclienttest.FromClientset(fake.NewSimpleClientset(tc.objects...)), tc.cfg)
			if !known {
				t.Fatal("every read answered, yet the problem is unknown")
			}
			if tc.want[0] == "" {
				if got != "" {
					t.Fatalf("problem %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) || !strings.HasPrefix(got, "data plane: ") {
					t.Errorf("problem %q does not say %q", got, w)
				}
			}
		})
	}
}

// A read that fails judges nothing: the problem is unknown, so that the
// view keeps what an earlier probe found.
func TestDataPlaneProblemUnknownOnAFailedRead(t *testing.T) {
	cs := fake.NewSimpleClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("context deadline exceeded")
	})
	if p, known := dataPlaneProblem(context.Background(), kubeclienttest.FromClientset(cs), &model.ClusterConfig{}); known || p != "" {
		t.Errorf("a failed read gave %q, known %v; want unknown", p, known)
	}
}
