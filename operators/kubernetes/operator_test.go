package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
)

// fakeOperator is an operator over a fake clientset holding objs.
func fakeOperator(objs ...runtime.Object) (operators.Operator, *fake.Clientset) {
	cs := fake.NewClientset(objs...)
	op := New("c1", func() (kubeclient.Interface, error) { return kubeclienttest.FromClientset(cs), nil }, Options{Clock: func() time.Time { return now }})
	return op, cs
}

func applyReq(app, ns string, versions ...model.VersionDeployment) *model.ApplyRequest {
	return &model.ApplyRequest{App: app, Namespace: ns, Deployments: versions, SpecHash: "h1"}
}

func ver(v string, replicas int, ports ...int) model.VersionDeployment {
	d := model.VersionDeployment{Version: v, Image: "busybox", Replicas: intp(replicas)}
	for _, p := range ports {
		d.Ports = append(d.Ports, model.ApplicationPort{Port: p})
	}
	return d
}

func TestGetType(t *testing.T) {
	op, _ := fakeOperator()
	if got := op.GetType(); got != model.EnvironmentKubernetes {
		t.Fatalf("GetType = %q, want %q", got, model.EnvironmentKubernetes)
	}
}

func TestClientErrorsPassThrough(t *testing.T) {
	for _, sentinel := range []error{operators.ErrEnvironmentNotReady, operators.ErrEnvironmentGone} {
		op := New("c1", func() (kubeclient.Interface, error) {
			return nil, fmt.Errorf("cluster c1: %w", sentinel)
		}, Options{})
		ctx := context.Background()
		calls := map[string]error{
			"HealthCheck": op.HealthCheck(ctx),
			"Uninstall":   op.Uninstall(ctx, "web"),
		}
		_, calls["Apply"] = op.Apply(ctx, applyReq("web", "", ver("v1", 1)))
		_, calls["GetApplicationStatus"] = op.GetApplicationStatus(ctx, "web")
		for name, err := range calls {
			if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "c1") {
				t.Errorf("%s: err = %v, want one wrapping %v and naming the environment", name, err, sentinel)
			}
		}
	}
}

func TestHealthCheck(t *testing.T) {
	op, cs := fakeOperator()
	if err := op.HealthCheck(context.Background()); err != nil {
		t.Fatalf("HealthCheck: %v", err)
	}
	cs.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is down")
	})
	if err := op.HealthCheck(context.Background()); !errors.Is(err, operators.ErrEnvironmentNotReady) {
		t.Fatalf("HealthCheck of a failing server = %v, want ErrEnvironmentNotReady", err)
	}
}

func TestAPIErrorClassification(t *testing.T) {
	o := New("c1", nil, Options{}).(*operator)
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	tests := []struct {
		err      error
		notReady bool
	}{
		{apierrors.NewServiceUnavailable("x"), true},
		{apierrors.NewTooManyRequests("x", 1), true},
		{apierrors.NewTimeoutError("x", 1), true},
		{apierrors.NewNotFound(gr, "web-v1"), false},
		{apierrors.NewForbidden(gr, "web-v1", errors.New("no")), false},
		{context.DeadlineExceeded, false},
	}
	for _, tc := range tests {
		err := o.apiError(tc.err, "apply %s", "web")
		if errors.Is(err, operators.ErrEnvironmentNotReady) != tc.notReady || !errors.Is(err, tc.err) {
			t.Errorf("apiError(%v) = %v; want ErrEnvironmentNotReady %v and the cause kept", tc.err, err, tc.notReady)
		}
	}
}

// TestApplyWithFakeClientset drives Apply through the fake clientset's
// server-side apply: objects, labels, namespace, pruning and the Service.
// The real API server is exercised in apiserver_test.go.
func TestApplyWithFakeClientset(t *testing.T) {
	ctx := context.Background()
	op, cs := fakeOperator()

	if _, err := op.Apply(ctx, applyReq("web", "shop", ver("v1", 3, 80), ver("v2", 1, 80, 443))); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
	if err != nil || ns.Labels[LabelManagedBy] != ManagedBy {
		t.Fatalf("namespace shop = %v, %v; want it created with our label", ns, err)
	}
	for _, v := range []string{"v1", "v2"} {
		d, err := cs.AppsV1().Deployments("shop").Get(ctx, "web-"+v, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get deployment web-%s: %v", v, err)
		}
		if d.Labels[LabelVersion] != v || d.Annotations[AnnotationSpecHash] != "h1" {
			t.Errorf("deployment web-%s labels %v annotations %v", v, d.Labels, d.Annotations)
		}
	}
	svc, err := cs.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(svc.Spec.Ports) != 2 {
		t.Fatalf("service = %v, %v; want ports 80 and 443", svc, err)
	}

	// v1 leaves and nothing has ports any more: its Deployment and the
	// Service go.
	if _, err := op.Apply(ctx, applyReq("web", "shop", ver("v2", 2))); err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if _, err := cs.AppsV1().Deployments("shop").Get(ctx, "web-v1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-v1 after prune: err = %v, want NotFound", err)
	}
	if d, err := cs.AppsV1().Deployments("shop").Get(ctx, "web-v2", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 2 {
		t.Errorf("web-v2 = %v, %v; want 2 replicas", d, err)
	}
	if _, err := cs.CoreV1().Services("shop").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("service after its last port went: err = %v, want NotFound", err)
	}

	// Moving to another namespace prunes the old one's Deployment.
	if _, err := op.Apply(ctx, applyReq("web", "", ver("v2", 1))); err != nil {
		t.Fatalf("Apply to default: %v", err)
	}
	if _, err := cs.AppsV1().Deployments("shop").Get(ctx, "web-v2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-v2 in shop after moving to default: err = %v, want NotFound", err)
	}
	if _, err := cs.AppsV1().Deployments("default").Get(ctx, "web-v2", metav1.GetOptions{}); err != nil {
		t.Errorf("web-v2 in default: %v", err)
	}
}

func TestApplyRefusesObjectsItDidNotMake(t *testing.T) {
	theirs := map[string]string{"app": "web"}
	other := map[string]string{LabelManagedBy: ManagedBy, LabelName: "web-v1"}
	tests := []struct {
		name string
		obj  runtime.Object
		want string
	}{
		{"unlabelled deployment", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-v1", Labels: theirs}},
			"deployment default/web-v1 exists and is not managed by singlecloud: rename the application or remove it"},
		{"unlabelled service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}},
			"service default/web exists and is not managed by singlecloud: rename the application or remove it"},
		{"another application's deployment", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-v1", Labels: other}},
			`deployment default/web-v1 belongs to singlecloud application "web-v1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op, cs := fakeOperator(tc.obj)
			_, err := op.Apply(context.Background(), applyReq("web", "", ver("v1", 1, 80)))
			if !errors.Is(err, ErrNotManaged) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Apply = %v, want ErrNotManaged saying %q", err, tc.want)
			}
			for _, a := range cs.Actions() {
				if a.GetVerb() == "patch" || a.GetVerb() == "delete" || a.GetVerb() == "update" {
					t.Errorf("Apply changed something: %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

func TestApplyBadRequestTouchesNothing(t *testing.T) {
	op, cs := fakeOperator()
	d := ver("v1", 1)
	d.Resources.CPULimit = "fast"
	_, err := op.Apply(context.Background(), applyReq("web", "", d))
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "resources.cpuLimit") {
		t.Fatalf("Apply = %v, want ErrInvalidRequest naming resources.cpuLimit", err)
	}
	if n := len(cs.Actions()); n != 0 {
		t.Fatalf("Apply of a bad request made %d API calls, want 0", n)
	}
}

func TestUninstallWithFakeClientset(t *testing.T) {
	ours := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: versionLabels("web", "v1")}
	}
	objs := []runtime.Object{
		&appsv1.Deployment{ObjectMeta: ours("a", "web-v1")},
		&appsv1.Deployment{ObjectMeta: ours("b", "web-v2")},
		&corev1.Service{ObjectMeta: ours("a", "web")},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-v3"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "api-v1", Labels: versionLabels("api", "v1")}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{LabelManagedBy: ManagedBy}}},
	}
	op, cs := fakeOperator(objs...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := op.Uninstall(ctx, "web"); err != nil {
		t.Fatalf("Uninstall: %v", err)
	}
	deps, _ := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	var left []string
	for _, d := range deps.Items {
		left = append(left, d.Namespace+"/"+d.Name)
	}
	if strings.Join(left, " ") != "a/api-v1 a/web-v3" {
		t.Errorf("deployments left = %v, want a/api-v1 a/web-v3", left)
	}
	if _, err := cs.CoreV1().Services("a").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("service after Uninstall: err = %v, want NotFound", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace a after Uninstall: %v (namespaces are never deleted)", err)
	}
	// Uninstalling again finds nothing and is no error.
	if err := op.Uninstall(ctx, "web"); err != nil {
		t.Fatalf("second Uninstall: %v", err)
	}
}

func TestUninstallWaitsForPods(t *testing.T) {
	// The fake clientset has no garbage collector: the pod its ReplicaSet
	// owns stays, and Uninstall waits until ctx ends. The orphans go.
	yes := true
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-v1-abc", UID: "rs-abc", Controller: &yes}}
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-v1-abc-x", Labels: versionLabels("web", "v1"), OwnerReferences: owner}}
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-v1-abc-y", Labels: versionLabels("web", "v1")}}
	orphanRS := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-v1-def", Labels: versionLabels("web", "v1")}}
	notOurs := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-v1-z"}}
	op, cs := fakeOperator(owned, orphan, orphanRS, notOurs)
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	err := op.Uninstall(ctx, "web")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "0 deployment(s) and 1 pod(s) still there") {
		t.Fatalf("Uninstall = %v, want a deadline error saying a pod is left", err)
	}
	bg := context.Background()
	if _, err := cs.CoreV1().Pods("a").Get(bg, orphan.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("orphan pod after Uninstall: err = %v, want NotFound", err)
	}
	if _, err := cs.AppsV1().ReplicaSets("a").Get(bg, orphanRS.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("orphan replicaset after Uninstall: err = %v, want NotFound", err)
	}
	for _, name := range []string{owned.Name, notOurs.Name} {
		if _, err := cs.CoreV1().Pods("a").Get(bg, name, metav1.GetOptions{}); err != nil {
			t.Errorf("pod %s after Uninstall: %v, want it left for its owner (or alone)", name, err)
		}
	}
}

func TestGetApplicationStatusWithFakeClientset(t *testing.T) {
	v1 := testDep("v1", 3, "1")
	rs1 := testRS(v1, "aaa", "1")
	v2 := testDep("v2", 1, "1")
	v2.Namespace = "other"
	rs2 := testRS(v2, "bbb", "1")
	p1 := testPod("p1", rs1, "n1", readyFor(time.Minute))
	p2 := testPod("p2", rs1, "n1", readyFor(time.Minute))
	p3 := testPod("p3", rs1, "n2", readyFor(time.Minute))
	p4 := testPod("p4", rs2, "n2", readyFor(time.Second))
	op, _ := fakeOperator(&v1, &rs1, &v2, &rs2, &p1, &p2, &p3, &p4)

	st, err := op.GetApplicationStatus(context.Background(), "web")
	if err != nil {
		t.Fatalf("GetApplicationStatus: %v", err)
	}
	if st.Healthy.Level != 75 || len(st.Versions) != 2 || st.Versions[0].Percent != 75 || st.Versions[1].Ready != 0 {
		t.Fatalf("status = %+v; want level 75, v1 75%% all ready, v2 not ready yet", st)
	}

	st, err = op.GetApplicationStatus(context.Background(), "nothing")
	if err != nil || st.Healthy.Level != 0 || len(st.Versions) != 0 || st.App != "nothing" {
		t.Fatalf("status of an app with no deployment = %+v, %v; want level 0 and no versions", st, err)
	}
}

func TestApplyTargetNameCases(t *testing.T) {
	foreignSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{"app": "web"}}}
	otherVersion := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-v1", UID: "old", Labels: versionLabels("web", "V1")}}
	deleting := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "web-v1", Labels: versionLabels("web", "v1"),
		DeletionTimestamp: &metav1.Time{Time: now}, Finalizers: []string{"foregroundDeletion"},
	}}
	tests := []struct {
		name    string
		obj     runtime.Object
		req     *model.ApplyRequest
		wantErr string
		check   func(t *testing.T, cs *fake.Clientset)
	}{{
		name: "a foreign service does not matter when no version has ports",
		obj:  foreignSvc, req: applyReq("web", "", ver("v1", 1)),
		check: func(t *testing.T, cs *fake.Clientset) {
			s, err := cs.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil || s.Labels[LabelManagedBy] != "" {
				t.Errorf("foreign service = %v, %v; want it left alone", s, err)
			}
		},
	}, {
		name: "our deployment of another version at the target name is replaced",
		obj:  otherVersion, req: applyReq("web", "", ver("v1", 1)),
		check: func(t *testing.T, cs *fake.Clientset) {
			d, err := cs.AppsV1().Deployments("default").Get(context.Background(), "web-v1", metav1.GetOptions{})
			if err != nil || d.Labels[LabelVersion] != "v1" || d.UID == "old" {
				t.Errorf("web-v1 = %v, %v; want a new deployment of v1", d, err)
			}
		},
	}, {
		name: "a target being deleted is an error to retry",
		obj:  deleting, req: applyReq("web", "", ver("v1", 1)),
		wantErr: "deployment default/web-v1 is being deleted",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op, cs := fakeOperator(tc.obj)
			_, err := op.Apply(context.Background(), tc.req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Apply = %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			tc.check(t, cs)
		})
	}
}
