package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestUpgradeKeepsTheWorkloadAndReverts: a 3-node cluster created at the
// previous release runs a Deployment of 2 busybox replicas with a
// PodDisruptionBudget. An upgrade cancelled once the control plane moved
// is reverted to the previous release and Running; the upgrade done again
// brings every node to the new release, through a kill -9 of singlecloud
// at its workers step, while the workload never has fewer than 1 ready
// replica, and the cluster's version moves only at the end.
func TestUpgradeKeepsTheWorkloadAndReverts(t *testing.T) {
	// Not beside another test: its drains wait (2 min each) for the
	// workload's replacement pods, which a second cluster's create on
	// the two cores once held past that bound.
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker,
		testbed.NeedContainerd2)
	// host3 runs containerd 2 with its defaults: Kubernetes 1.38 drops
	// containerd 1.x, and the upgraded kubelet takes its cgroup driver
	// from containerd 2's CRI.
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true, Containerd2: []int{3},
		Images: append(testbed.AllImages(), testbed.PreviousImages()...)})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	manager := hosts[0].Gateway + ":8080"
	from, to := testbed.PreviousKubeVersion, testbed.KubeVersion
	// Each release's default images (the testbed's carry their names)
	// and kubelet (the testbin's mirror has both releases').
	body := func(version string) map[string]any {
		b := clusterBody("up", manager, hosts)
		for _, n := range b["nodes"].([]map[string]any) {
			delete(n, "taints")
		}
		b["kubernetesVersion"] = version
		return b
	}
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body(from), http.StatusCreated)
	if c := admin.waitStatus("up", "Running", 10*time.Minute); c["version"] != from {
		t.Fatalf("created at %v, want %s", c["version"], from)
	}
	kube := kubeClient(t, admin.kubeconfig("up"))
	startWorkload(t, kube)
	checkNodeVersions(t, kube, from)

	// A skipped minor or a downgrade is refused and changes nothing.
	status, resp := admin.do(http.MethodPut, apiPath+"/clusters/up", body("v1.34.2"))
	expectError(t, "a downgrade", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "kubernetesVersion")

	// Upgrade, cancelled once the control plane is on the new release.
	admin.mustDo(http.MethodPut, apiPath+"/clusters/up", body(to), http.StatusOK)
	canceled := false
	admin.followZkelog(t, "up", 0, 10*time.Minute, func(f zkelogFrame) {
		if f.Step == "workers" && !canceled {
			canceled = true
			// Every member runs etcd 3.7 now: etcd raises its cluster
			// version, after which a 3.6 member cannot start, and the
			// revert has to go through etcd's downgrade.
			eventually(t, time.Minute, "etcd's cluster version 3.7", func() (bool, string) {
				v := etcdVersions(t, hosts[0])
				return v == "cluster 3.7, server 3.7.0", v
			})
			admin.mustDo(http.MethodPost, apiPath+"/clusters/up?action=cancel", nil, http.StatusOK)
		}
	})
	if !canceled {
		t.Fatal("the upgrade never reached its workers step")
	}
	// (An Unavailable cluster shows no version: it is not connected.)
	admin.waitStatus("up", "Unavailable", 2*time.Minute)
	status, resp = admin.do(http.MethodPut, apiPath+"/clusters/up", body(to))
	expectError(t, "an update during an unfinished upgrade", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "revert")

	// Revert: back to the previous release, Running.
	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters/up?action=revert", nil, http.StatusOK)
	revertLog, _ := admin.followZkelog(t, "up", 0, 10*time.Minute, nil)
	if last := revertLog[len(revertLog)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, revertLog)
		t.Fatalf("revert ended %+v", last)
	}
	c := admin.waitStatus("up", "Running", time.Minute)
	t.Logf("revert took %s", time.Since(start).Round(time.Second))
	if c["version"] != from {
		t.Errorf("reverted cluster reports %v", c["version"])
	}
	checkNodeVersions(t, kube, from)
	if !slices.ContainsFunc(revertLog, func(f zkelogFrame) bool {
		return f.Step == "etcd" && strings.Contains(f.Message, "enabling etcd's downgrade to 3.6")
	}) {
		logFrames(t, revertLog)
		t.Error("the revert's etcd step did not enable etcd's downgrade to 3.6")
	}
	for _, h := range hosts {
		if v := etcdVersions(t, h); v != "cluster 3.6, server 3.6.8" {
			t.Errorf("etcd on %s after the revert: %s, want cluster 3.6, server 3.6.8", h.Name, v)
		}
	}

	// The upgrade again, to its end, the workload watched throughout;
	// singlecloud is killed (kill -9) once the workers' turn has come,
	// and the upgrade resumes on restart.
	watch := watchReady(t, kube)
	start = time.Now()
	admin.mustDo(http.MethodPut, apiPath+"/clusters/up", body(to), http.StatusOK)
	admin.waitStep(t, "up", "workers")
	inst.restart(syscall.SIGKILL)
	admin = inst.admin(t)
	if s := admin.status("up"); s != "Updating" {
		t.Errorf("after kill -9 mid-upgrade the cluster is %q, want Updating (resumed)", s)
	}
	frames, _ := admin.followZkelog(t, "up", 0, 15*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("upgrade ended %+v", last)
	}
	elapsed := time.Since(start)
	low := watch()
	t.Logf("upgrade of 3 nodes took %s (%s per node); fewest ready replicas during it: %d", elapsed.Round(time.Second), (elapsed / 3).Round(time.Second), low)
	if low < 1 {
		t.Errorf("the workload had %d ready replicas during the upgrade, want at least 1", low)
	}
	if c := admin.waitStatus("up", "Running", time.Minute); c["version"] != to {
		t.Errorf("upgraded cluster reports %v", c["version"])
	}
	checkNodeVersions(t, kube, to)
	eventually(t, time.Minute, "etcd's cluster version 3.7 again", func() (bool, string) {
		v := etcdVersions(t, hosts[1])
		return v == "cluster 3.7, server 3.7.0", v
	})
	checkPinnedSnapshot(t, admin, "up", "upgrade")
}

// etcdVersions reads h's etcd's cluster and server versions from its
// metrics (plain HTTP on the node's loopback, reached through sshd's
// port forwarding): "cluster 3.7, server 3.7.0".
func etcdVersions(t *testing.T, h *testbed.Host) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ssh, err := h.DialSSH(ctx)
	if err != nil {
		return fmt.Sprintf("ssh: %v", err)
	}
	defer ssh.Close()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return ssh.DialContext(ctx, network, addr)
	}}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:2381/metrics", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Sprintf("metrics: %v", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Sprintf("metrics: %v", err)
	}
	cluster := regexp.MustCompile(`(?m)^etcd_cluster_version\{cluster_version="([^"]+)"\} 1$`).FindStringSubmatch(string(out))
	server := regexp.MustCompile(`(?m)^etcd_server_version\{server_version="([^"]+)"\} 1$`).FindStringSubmatch(string(out))
	if cluster == nil || server == nil {
		return "no version in etcd's metrics"
	}
	return "cluster " + cluster[1] + ", server " + server[1]
}

// startWorkload runs a Deployment of 2 busybox replicas with a budget of
// at least 1 available, and waits for both replicas.
func startWorkload(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "steady"}
	replicas := int32(2)
	pod := busyboxPod("steady", corev1.RestartPolicyAlways, "sh", "-c", "sleep 3600")
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "steady"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
	if _, err := kube.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "steady"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	if _, err := kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "2 ready replicas of steady", func() (bool, string) {
		return readyReplicas(kube) == 2, ""
	})
}

// readyReplicas is the Deployment's ready replica count (-1 when it
// cannot be read).
func readyReplicas(kube kubernetes.Interface) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := kube.AppsV1().Deployments("default").Get(ctx, "steady", metav1.GetOptions{})
	if err != nil {
		return -1
	}
	return int(d.Status.ReadyReplicas)
}

// watchReady samples the ready replicas twice a second until the func it
// returns is called, which returns the fewest seen (an API that did not
// answer counts as unknown, not as zero).
func watchReady(t *testing.T, kube kubernetes.Interface) func() int {
	t.Helper()
	var mu sync.Mutex
	low := 2
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if n := readyReplicas(kube); n >= 0 {
				mu.Lock()
				low = min(low, n)
				mu.Unlock()
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return low
	}
}

// checkNodeVersions checks that every Node's kubelet reports version.
func checkNodeVersions(t *testing.T, kube kubernetes.Interface, version string) {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nodes.Items {
		if v := n.Status.NodeInfo.KubeletVersion; v != version {
			got = append(got, n.Name+"="+v)
		}
		if n.Spec.Unschedulable {
			t.Errorf("node %s is left cordoned", n.Name)
		}
	}
	if len(got) > 0 || len(nodes.Items) == 0 {
		t.Errorf("nodes not at %s: %s (of %d)", version, strings.Join(got, ", "), len(nodes.Items))
	}
}
