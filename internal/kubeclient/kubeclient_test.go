package kubeclient_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/test/testbed"
)

// testNS is the namespace of the namespaced objects of the tests.
const testNS = "kc"

// TestAgainstAPIServer drives every resource client through get, list,
// create, update, patch, server-side apply and delete against a real
// kube-apiserver (from the testbed; skipped with the reason when `make
// testbin` has not been run), and the extra calls: pod binding, eviction
// and log request, status updates, access reviews, the server version.
func TestAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	cfg, err := cp.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	cfg.QPS, cfg.Burst = 50, 100
	kc, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", testNS, err)
	}
	// Pods need it; the controller that makes it may not have yet.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: testNS}}
	if _, err := kc.CoreV1().ServiceAccounts(testNS).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create service account default: %v", err)
	}

	om := func(name string, namespaced bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "kubeclient"}}
		if namespaced {
			m.Namespace = testNS
		}
		return m
	}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: podSpec}
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"configmaps", func(t *testing.T) {
			exercise(t, ctx, kc.CoreV1().ConfigMaps(testNS), &corev1.ConfigMap{ObjectMeta: om("cm", true), Data: map[string]string{"k": "v"}}, "v1", "ConfigMap", countItems[*corev1.ConfigMapList])
		}},
		{"events", func(t *testing.T) {
			ev := &corev1.Event{ObjectMeta: om("ev", true), Reason: "Test", Message: "m", Type: corev1.EventTypeNormal,
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: "p"}}
			exercise(t, ctx, kc.CoreV1().Events(testNS), ev, "v1", "Event", countItems[*corev1.EventList])
		}},
		{"namespaces", func(t *testing.T) {
			exercise(t, ctx, kc.CoreV1().Namespaces(), &corev1.Namespace{ObjectMeta: om("ns", false)}, "v1", "Namespace", countItems[*corev1.NamespaceList])
		}},
		{"nodes", func(t *testing.T) {
			nodes := kc.CoreV1().Nodes()
			exercise(t, ctx, nodes, &corev1.Node{ObjectMeta: om("node", false)}, "v1", "Node", countItems[*corev1.NodeList])
			n, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: om("node-status", false)}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			n.Status.Phase = corev1.NodeRunning
			if got, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil || got.Status.Phase != corev1.NodeRunning {
				t.Fatalf("UpdateStatus = %v, %v", got, err)
			}
		}},
		{"pods", func(t *testing.T) {
			exercise(t, ctx, kc.CoreV1().Pods(testNS), &corev1.Pod{ObjectMeta: om("pod", true), Spec: podSpec}, "v1", "Pod", countItems[*corev1.PodList])
			podExtras(t, ctx, kc)
		}},
		{"services", func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: om("svc", true), Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}}}
			exercise(t, ctx, kc.CoreV1().Services(testNS), svc, "v1", "Service", countItems[*corev1.ServiceList])
		}},
		{"serviceaccounts", func(t *testing.T) {
			exercise(t, ctx, kc.CoreV1().ServiceAccounts(testNS), &corev1.ServiceAccount{ObjectMeta: om("sa", true)}, "v1", "ServiceAccount", countItems[*corev1.ServiceAccountList])
		}},
		{"deployments", func(t *testing.T) {
			deps := kc.AppsV1().Deployments(testNS)
			d := &appsv1.Deployment{ObjectMeta: om("dep", true), Spec: appsv1.DeploymentSpec{Selector: selector, Template: template}}
			exercise(t, ctx, deps, d, "apps/v1", "Deployment", countItems[*appsv1.DeploymentList])
			d = d.DeepCopy()
			d.Name = "dep-status"
			got, err := deps.Create(ctx, d, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			got.Status.ObservedGeneration = got.Generation
			if got, err = deps.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil || got.Status.ObservedGeneration != got.Generation {
				t.Fatalf("UpdateStatus = %v, %v", got, err)
			}
		}},
		{"replicasets", func(t *testing.T) {
			rs := &appsv1.ReplicaSet{ObjectMeta: om("rs", true), Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: template}}
			exercise(t, ctx, kc.AppsV1().ReplicaSets(testNS), rs, "apps/v1", "ReplicaSet", countItems[*appsv1.ReplicaSetList])
		}},
		{"clusterroles", func(t *testing.T) {
			cr := &rbacv1.ClusterRole{ObjectMeta: om("kc-role", false), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
			exercise(t, ctx, kc.RbacV1().ClusterRoles(), cr, "rbac.authorization.k8s.io/v1", "ClusterRole", countItems[*rbacv1.ClusterRoleList])
		}},
		{"clusterrolebindings", func(t *testing.T) {
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: om("kc-binding", false),
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "someone"}}}
			exercise(t, ctx, kc.RbacV1().ClusterRoleBindings(), crb, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", countItems[*rbacv1.ClusterRoleBindingList])
		}},
		{"poddisruptionbudgets", func(t *testing.T) {
			one := intstr.FromInt32(1)
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: om("pdb", true), Spec: policyv1.PodDisruptionBudgetSpec{Selector: selector, MinAvailable: &one}}
			exercise(t, ctx, kc.PolicyV1().PodDisruptionBudgets(testNS), pdb, "policy/v1", "PodDisruptionBudget", countItems[*policyv1.PodDisruptionBudgetList])
		}},
		{"selfsubjectaccessreviews", func(t *testing.T) {
			review, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}},
			}, metav1.CreateOptions{})
			if err != nil || !review.Status.Allowed {
				t.Fatalf("access review of a system:masters user = %+v, %v; want allowed", review, err)
			}
		}},
		{"version", func(t *testing.T) {
			v, err := kc.Discovery().ServerVersion()
			if err != nil || v.GitVersion != testbed.KubeVersion {
				t.Fatalf("ServerVersion = %+v, %v; want %s", v, err, testbed.KubeVersion)
			}
			raw, err := kc.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
			if err != nil || !json.Valid(raw) {
				t.Fatalf("GET /version = %q, %v", raw, err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// object is a typed API object.
type object interface {
	runtime.Object
	metav1.Object
}

// exercise creates obj through c, then gets, lists, updates, patches
// (merge), server-side applies and deletes it, checking each answer.
// obj must carry the label test=kubeclient; apiVersion and kind are its
// type's, for the apply document.
func exercise[T object, L runtime.Object](t *testing.T, ctx context.Context, c kubeclient.Resource[T, L], obj T, apiVersion, kind string, count func(L) int) {
	t.Helper()
	name, ns := obj.GetName(), obj.GetNamespace()
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if created.GetUID() == "" {
		t.Fatalf("create %s: no UID in the answer", name)
	}
	got, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("get %s = uid %q, %v; want %q", name, got.GetUID(), err, created.GetUID())
	}
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "test=kubeclient"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if n := count(list); n < 1 {
		t.Fatalf("list by label found %d, want at least 1", n)
	}
	if list, err = c.List(ctx, metav1.ListOptions{LabelSelector: "test=nothing"}); err != nil || count(list) != 0 {
		t.Fatalf("list by another label = %d items, %v; want 0", count(list), err)
	}

	got.SetAnnotations(map[string]string{"updated": "yes"})
	updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.GetAnnotations()["updated"] != "yes" {
		t.Fatalf("update %s = %v, %v", name, updated.GetAnnotations(), err)
	}

	patched, err := c.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{})
	if err != nil || patched.GetLabels()["patched"] != "yes" || patched.GetLabels()["test"] != "kubeclient" {
		t.Fatalf("merge patch %s = labels %v, %v", name, patched.GetLabels(), err)
	}

	doc := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "labels": map[string]string{"applied": "yes"}}}
	if ns != "" {
		doc["metadata"].(map[string]any)["namespace"] = ns
	}
	data, _ := json.Marshal(doc)
	force := true
	applied, err := c.Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: "kubeclient-test", Force: &force})
	if err != nil || applied.GetLabels()["applied"] != "yes" {
		t.Fatalf("server-side apply %s = labels %v, %v", name, applied.GetLabels(), err)
	}
	if !managedBy(applied, "kubeclient-test", metav1.ManagedFieldsOperationApply) {
		t.Fatalf("after apply, managed fields of %s = %+v; want an Apply entry of kubeclient-test", name, applied.GetManagedFields())
	}

	if err := c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	after, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err == nil && after.GetDeletionTimestamp() != nil:
		// A namespace is finalised by its controller; a pod (not bound
		// here) goes at once, so this is only the namespace.
	default:
		t.Fatalf("get %s after delete = %v; want NotFound", name, err)
	}
	if err := c.Delete(ctx, "missing", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("delete of a missing object = %v, want NotFound", err)
	}
}

// countItems is the number of items of a list.
func countItems[L runtime.Object](l L) int { return meta.LenList(l) }

func managedBy(obj metav1.Object, manager string, op metav1.ManagedFieldsOperationType) bool {
	for _, f := range obj.GetManagedFields() {
		if f.Manager == manager && f.Operation == op {
			return true
		}
	}
	return false
}

// podExtras checks the pods client's subresources: the log request's
// path and parameters, a binding, and an eviction.
func podExtras(t *testing.T, ctx context.Context, kc kubeclient.Interface) {
	t.Helper()
	pods := kc.CoreV1().Pods(testNS)
	tail := int64(5)
	u := pods.GetLogs("web-1", &corev1.PodLogOptions{Container: "app", TailLines: &tail, Follow: true}).URL()
	// timeout is the client's (cfg.Timeout), as client-go sends it.
	wantQuery := url.Values{"container": {"app"}, "tailLines": {"5"}, "follow": {"true"}, "timeout": {"30s"}}
	if u.Path != "/api/v1/namespaces/"+testNS+"/pods/web-1/log" || u.Query().Encode() != wantQuery.Encode() {
		t.Errorf("GetLogs URL = %s, want path /api/v1/namespaces/%s/pods/web-1/log and query %s", u, testNS, wantQuery.Encode())
	}

	if _, err := kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bind-target"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}
	for _, name := range []string{"bound", "evicted"} {
		if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: testNS}, Target: corev1.ObjectReference{Kind: "Node", Name: "bind-target"}}
	if err := pods.Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	p, err := pods.Get(ctx, "bound", metav1.GetOptions{})
	if err != nil || p.Spec.NodeName != "bind-target" {
		t.Fatalf("pod after binding: node %q, %v; want bind-target", p.Spec.NodeName, err)
	}
	p.Status.Phase = corev1.PodRunning
	if p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("UpdateStatus = %v, %v", p, err)
	}

	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evicted", Namespace: testNS}}
	if err := pods.EvictV1(ctx, ev); err != nil {
		t.Fatalf("evict: %v", err)
	}
	// An unbound pod is deleted at once.
	if _, err := pods.Get(ctx, "evicted", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("evicted pod: %v, want NotFound", err)
	}
	ev.Name = "missing"
	if err := pods.EvictV1(ctx, ev); !apierrors.IsNotFound(err) {
		t.Fatalf("eviction of a missing pod = %v, want NotFound", err)
	}
}

// TestNewForConfig checks the config without a request: a QPS without a
// burst is refused, as client-go's clientset refuses it.
func TestNewForConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     rest.Config
		wantErr bool
	}{
		{"defaults", rest.Config{Host: "https://127.0.0.1:1"}, false},
		{"rate limited", rest.Config{Host: "https://127.0.0.1:1", QPS: 5, Burst: 10}, false},
		{"QPS without burst", rest.Config{Host: "https://127.0.0.1:1", QPS: 5}, true},
		{"bad TLS", rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not PEM")}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := kubeclient.NewForConfig(&tc.cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("NewForConfig = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (kc.CoreV1() == nil || kc.AppsV1() == nil || kc.RbacV1() == nil || kc.PolicyV1() == nil || kc.AuthorizationV1() == nil || kc.Discovery().RESTClient() == nil) {
				t.Fatal("a group client is missing")
			}
			if err != nil && kc != nil {
				t.Fatalf("NewForConfig returned a client (%T) with its error", kc)
			}
		})
	}
}
