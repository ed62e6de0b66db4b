package zke

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
)

// TestRemoteHashScript runs the script a Verify sends to a node in a
// local shell, on paths that need quoting, one of them missing.
func TestRemoteHashScript(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "ca.pem")
	b := filepath.Join(dir, "it's a key; $(echo no).pem")
	if err := os.WriteFile(a, []byte("cert"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{a, filepath.Join(dir, "missing.pem"), b}
	out, err := exec.CommandContext(context.Background(), "sh", "-c", remoteHashScript(paths)).Output()
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	got, err := parseRemoteHashes(string(out), len(paths))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{contentHash([]byte("cert")), hashMissing, contentHash(nil)}
	if !slices.Equal(got, want) {
		t.Fatalf("hashes %q, want %q", got, want)
	}
	if _, err := parseRemoteHashes("abc\n", 2); err == nil {
		t.Error("a short answer is accepted")
	}
}

func TestMissingRoutes(t *testing.T) {
	routes := "10.42.1.0/24 via 10.0.0.2 dev eth0 \n10.42.2.0/24 via 10.0.0.9 dev eth0\nfd00:42:3::/64 via fd00::3 dev eth0 metric 1024\n"
	want := map[string]string{"10.42.1.0/24": "10.0.0.2", "10.42.2.0/24": "10.0.0.3", "fd00:42:3::/64": "fd00::3", "10.42.4.0/24": "10.0.0.4"}
	got := missingRoutes(routes, want)
	if !slices.Equal(got, []string{"10.42.2.0/24 via 10.0.0.3", "10.42.4.0/24 via 10.0.0.4"}) {
		t.Fatalf("missing %q", got)
	}
	if got := missingRoutes("", nil); len(got) != 0 {
		t.Fatalf("missing %q with nothing wanted", got)
	}
}

func TestContainerMatches(t *testing.T) {
	n := node{Node: model.Node{Name: "n1"}}
	withHash := func(h, status string) runtime.ContainerInfo {
		return runtime.ContainerInfo{Status: status, Labels: map[string]string{runtime.LabelSpecHash: h}}
	}
	tests := []struct {
		name string
		info runtime.ContainerInfo
		want string // "" = matches
	}{
		{"running the spec", withHash("h", "running"), ""},
		{"another spec", withHash("x", "running"), "runs another spec"},
		{"restarting", withHash("h", "restarting"), "is restarting"},
		{"exited", withHash("h", "exited"), "is exited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := containerMatches(n, "etcd", "h", tt.info)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, errStale) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// addonsCluster is a fake cluster after the addons step: the kubelet API
// binding, the workers labelled and tainted, CoreDNS rolled out.
func addonsCluster(t *testing.T, r *run) *fake.Clientset {
	t.Helper()
	ctx := context.Background()
	var objs []k8sruntime.Object
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
	}
	kube := fake.NewClientset(objs...)
	k := kubeclienttest.FromClientset(kube)
	if err := ensureKubeletAPIBinding(ctx, k); err != nil {
		t.Fatal(err)
	}
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		if err := r.labelAndTaint(ctx, k, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.ensureCoreDNS(ctx, k); err != nil {
		t.Fatal(err)
	}
	d, err := kube.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, corednsName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
	if _, err := kube.AppsV1().Deployments(metav1.NamespaceSystem).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return kube
}

func TestAddonsCurrent(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		change func(t *testing.T, r *run, kube *fake.Clientset)
		want   string // "" = in place
	}{
		{"in place", nil, ""},
		{"a label removed by hand", func(t *testing.T, r *run, kube *fake.Clientset) {
			k, _ := kube.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
			delete(k.Labels, "zone")
			_, _ = kube.CoreV1().Nodes().Update(ctx, k, metav1.UpdateOptions{})
		}, "lacks the label zone=a"},
		{"a taint removed by hand", func(t *testing.T, r *run, kube *fake.Clientset) {
			k, _ := kube.CoreV1().Nodes().Get(ctx, "n2", metav1.GetOptions{})
			k.Spec.Taints = nil
			_, _ = kube.CoreV1().Nodes().Update(ctx, k, metav1.UpdateOptions{})
		}, "lacks the taint gpu=yes:NoSchedule"},
		{"a new label configured", func(t *testing.T, r *run, kube *fake.Clientset) {
			r.nodes[2].Labels = map[string]string{"tier": "web"}
		}, "lacks the label tier=web"},
		{"another CoreDNS image configured", func(t *testing.T, r *run, kube *fake.Clientset) {
			r.images[model.ImageCoreDNS] = "reg/coredns:2"
		}, "another image"},
		{"another upstream DNS", func(t *testing.T, r *run, kube *fake.Clientset) {
			r.cfg.ClusterUpstreamDNS = []string{"9.9.9.9"}
		}, "Corefile differs"},
		{"CoreDNS not available", func(t *testing.T, r *run, kube *fake.Clientset) {
			d, _ := kube.AppsV1().Deployments(metav1.NamespaceSystem).Get(ctx, corednsName, metav1.GetOptions{})
			d.Status.AvailableReplicas = 0
			_, _ = kube.AppsV1().Deployments(metav1.NamespaceSystem).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		}, "updated replicas available"},
		{"the kube-dns service deleted", func(t *testing.T, r *run, kube *fake.Clientset) {
			_ = kube.CoreV1().Services(metav1.NamespaceSystem).Delete(ctx, "kube-dns", metav1.DeleteOptions{})
		}, "kube-dns service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRun(t, testConfig(), nil)
			kube := addonsCluster(t, r)
			if tt.change != nil {
				tt.change(t, r, kube)
			}
			err := r.addonsCurrent(ctx, kubeclienttest.FromClientset(kube))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("addonsCurrent = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestDrainedCurrent(t *testing.T) {
	ctx := context.Background()
	removed := []node{{Node: model.Node{Name: "w9"}}}
	if err := drainedCurrent(ctx, kubeclienttest.FromClientset(fake.NewClientset()), removed); err != nil {
		t.Fatalf("a node gone from Kubernetes: %v", err)
	}
	still := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w9"}})
	if err := drainedCurrent(ctx, kubeclienttest.FromClientset(still), removed); !errors.Is(err, errStale) {
		t.Fatalf("a node still in Kubernetes: %v", err)
	}
}
