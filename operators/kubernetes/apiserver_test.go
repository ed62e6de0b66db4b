package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestOperatorAgainstAPIServer drives the operator against a real
// kube-apiserver and kube-controller-manager from the testbed (no
// scheduler, no kubelet: the test binds pods and reports them ready
// itself, and finishes their graceful deletion as a kubelet would). It is
// skipped, with the reason, when `make testbin` has not been run.
func TestOperatorAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	cfg, err := cp.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	// The operator uses kubeclient, as in the server; the test's own
	// checks and its stand-in kubelet use client-go's clientset.
	kc, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := clientset.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := startKubelet(t, ctx, cs)
	op := New("c1", func() (kubeclient.Interface, error) { return kc, nil }, Options{MinReady: time.Second})

	if err := op.HealthCheck(ctx); err != nil {
		t.Fatalf("HealthCheck: %v", err)
	}

	// Install v1 into a namespace that does not exist yet.
	v1 := ver("v1", 2, 80)
	v1.Resources = model.Resources{CPURequest: "10m", MemoryLimit: "32Mi"}
	mustApply(t, ctx, op, applyReq("web", "shop", v1))
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
	if err != nil || ns.Labels[LabelManagedBy] != ManagedBy {
		t.Fatalf("namespace shop = %v, %v; want it created and labelled", ns, err)
	}
	waitStatus(t, ctx, op, "v1 created, nothing scheduled", func(st *model.ApplicationStatus) error {
		return expectVersions(st, 0, "v1 100% 0/2 [(unscheduled) 0/2 pod Pending]")
	})

	// Applying the same request again changes nothing.
	before := versions(t, ctx, cs, "shop")
	mustApply(t, ctx, op, applyReq("web", "shop", v1))
	if after := versions(t, ctx, cs, "shop"); after != before {
		t.Fatalf("resource versions after an identical Apply:\n%s\nbefore:\n%s", after, before)
	}

	k.runAll(t, ctx, "shop")
	waitStatus(t, ctx, op, "v1 ready", func(st *model.ApplicationStatus) error {
		return expectVersions(st, 100, "v1 100% 2/2 [node-a 1/1, node-b 1/1]")
	})

	// Canary: v1 grows to 3 (the same template), v2 gets 1.
	v1.Replicas = intp(3)
	mustApply(t, ctx, op, applyReq("web", "shop", v1, ver("v2", 1, 8080)))
	svc, err := cs.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(svc.Spec.Ports) != 2 || svc.Spec.Selector[LabelVersion] != "" {
		t.Fatalf("service = %+v, %v; want ports 80 and 8080 selecting every version", svc, err)
	}
	waitStatus(t, ctx, op, "canary created", func(st *model.ApplicationStatus) error {
		return expectVersions(st, 50, "v1 75% 2/3 [(unscheduled) 0/1 pod Pending, node-a 1/1, node-b 1/1]", "v2 25% 0/1 [(unscheduled) 0/1 pod Pending]")
	})
	k.runAll(t, ctx, "shop")
	waitStatus(t, ctx, op, "canary ready", func(st *model.ApplicationStatus) error {
		return expectVersions(st, 100, "v1 75% 3/3", "v2 25% 1/1")
	})

	// A new v1 image starts a rollout: the old template's ready pods no
	// longer count.
	v1b := v1
	v1b.Image = "busybox:1.37"
	mustApply(t, ctx, op, applyReq("web", "shop", v1b, ver("v2", 1, 8080)))
	waitStatus(t, ctx, op, "v1 rolling out", func(st *model.ApplicationStatus) error {
		return expectVersions(st, 25, "v1 75% 0/3 [(missing) 0/2 not created yet, (unscheduled) 0/1 pod Pending]", "v2 25% 1/1")
	})

	// An object of the target name that singlecloud did not make stops
	// the apply and is left alone.
	theirs := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-v1", Labels: map[string]string{"app": "api"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if theirs, err = cs.AppsV1().Deployments("shop").Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = op.Apply(ctx, applyReq("api", "shop", ver("v1", 1)))
	if !errors.Is(err, ErrNotManaged) || !strings.Contains(err.Error(), "deployment shop/api-v1 exists and is not managed by singlecloud") {
		t.Fatalf("Apply over a foreign deployment = %v, want ErrNotManaged", err)
	}

	// v1 leaves and no port is left: its Deployment, pods and the Service
	// go.
	mustApply(t, ctx, op, applyReq("web", "shop", ver("v2", 1)))
	if _, err := cs.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("service after its ports went: %v, want NotFound", err)
	}
	waitFor(t, ctx, "v1 pods gone", func() error {
		pods, err := cs.CoreV1().Pods("shop").List(ctx, metav1.ListOptions{LabelSelector: LabelVersion + "=v1"})
		if err == nil && len(pods.Items) > 0 {
			err = fmt.Errorf("%d pods of v1 left", len(pods.Items))
		}
		return err
	})

	if err := op.Uninstall(ctx, "web"); err != nil {
		t.Fatalf("Uninstall: %v", err)
	}
	st, err := op.GetApplicationStatus(ctx, "web")
	if err != nil || st.Healthy.Level != 0 || len(st.Versions) != 0 {
		t.Fatalf("status after Uninstall = %+v, %v; want level 0 and no versions", st, err)
	}
	rss, err := cs.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{LabelSelector: appSelector("web")})
	if err != nil || len(rss.Items) != 0 {
		t.Fatalf("replicasets after Uninstall: %d, %v", len(rss.Items), err)
	}
	if got, err := cs.AppsV1().Deployments("shop").Get(ctx, "api-v1", metav1.GetOptions{}); err != nil || got.UID != theirs.UID {
		t.Fatalf("foreign deployment after Uninstall: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace after Uninstall: %v (namespaces are never deleted)", err)
	}
}

func mustApply(t *testing.T, ctx context.Context, op operators.Operator, req *model.ApplyRequest) {
	t.Helper()
	resp, err := op.Apply(ctx, req)
	if err != nil || !resp.Success {
		t.Fatalf("Apply: %+v, %v", resp, err)
	}
}

// versions lists the resource versions of our objects in ns.
func versions(t *testing.T, ctx context.Context, cs clientset.Interface, ns string) string {
	t.Helper()
	var b strings.Builder
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: appSelector("web")})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		fmt.Fprintf(&b, "deployment %s %s generation %d\n", d.Name, d.ResourceVersion, d.Generation)
	}
	svcs, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: appSelector("web")})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs.Items {
		fmt.Fprintf(&b, "service %s %s\n", s.Name, s.ResourceVersion)
	}
	return b.String()
}

// expectVersions checks the overall level (unless -1) and each version as
// "<version> <percent>% <ready>/<desired>", followed by its nodes in
// brackets when given.
func expectVersions(st *model.ApplicationStatus, level int, want ...string) error {
	var got []string
	for i, v := range st.Versions {
		s := fmt.Sprintf("%s %g%% %d/%d", v.Version, v.Percent, v.Ready, v.Desired)
		if i < len(want) && strings.Contains(want[i], "[") {
			var nodes []string
			for _, n := range v.Nodes {
				nodes = append(nodes, strings.TrimSpace(fmt.Sprintf("%s %d/%d %s", n.Node, n.Ready, n.Desired, n.Reason)))
			}
			s += " [" + strings.Join(nodes, ", ") + "]"
		}
		got = append(got, s)
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") || (level >= 0 && st.Healthy.Level != level) {
		return fmt.Errorf("level %d, versions %q; want level %d, %q", st.Healthy.Level, got, level, want)
	}
	return nil
}

func waitStatus(t *testing.T, ctx context.Context, op operators.Operator, what string, check func(*model.ApplicationStatus) error) {
	t.Helper()
	waitFor(t, ctx, what, func() error {
		st, err := op.GetApplicationStatus(ctx, "web")
		if err != nil {
			return err
		}
		return check(st)
	})
}

// waitFor polls check until it returns nil, failing the test after 60 s.
func waitFor(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// kubelet plays the part of the kubelets the testbed control plane lacks:
// it runs pods (binds them to a node and reports them ready) when asked,
// and finishes the graceful deletion of our pods, which a real kubelet
// does once their containers stopped.
type kubelet struct {
	cs   clientset.Interface
	next int
}

func startKubelet(t *testing.T, ctx context.Context, cs clientset.Interface) *kubelet {
	for _, n := range []string{"node-a", "node-b"} {
		// Pods bound to a node that does not exist are deleted by the
		// pod garbage collector.
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", n, err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sel := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy}
		for ctx.Err() == nil {
			pods, err := cs.CoreV1().Pods("").List(ctx, sel)
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil {
						zero := int64(0)
						_ = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(p.UID))})
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &kubelet{cs: cs}
}

// runAll binds every unscheduled pod of ours in ns to node-a or node-b in
// turn and reports it running and ready for a minute.
func (k *kubelet) runAll(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	pods, err := k.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		node := []string{"node-a", "node-b"}[k.next%2]
		k.next++
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := k.cs.CoreV1().Pods(ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind %s: %v", p.Name, err)
		}
		got, err := k.cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", p.Name, err)
		}
		since := metav1.NewTime(time.Now().Add(-time.Minute))
		got.Status.Phase = corev1.PodRunning
		got.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: since},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since},
		}
		if _, err := k.cs.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("report %s ready: %v", p.Name, err)
		}
	}
}
