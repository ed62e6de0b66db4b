package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// Hosts whose containerd socket is not at the default path (issue 8): on
// host2 containerd listens outside /run and /run/containerd/containerd.sock
// is a symlink to it, as some distributions and custom installs do; on
// host3 it listens outside /run with no symlink, and its node config names
// the real path.
//
//  1. host3 left at the default path: preflight refuses it, naming the
//     field to set, before anything is changed.
//  2. host3's kubelet crash-loops (a flag it does not know): the failure
//     names the kubelet and its last error line, not kube-proxy two
//     components downstream, and comes without waiting out the health
//     timeout; while the workers step ran, the cluster said so.
//  3. Fixed, the create reaches Running: each kubelet reaches its
//     runtime through binds of the socket's real directory.
func TestCreateWithContainerdSocketOutsideRun(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	const (
		linked  = "/var/opt/ctrd/containerd.sock"      // host2, behind the default path's symlink
		real    = "/var/lib/ctrd-real/containerd.sock" // host3, named by its config
		cluster = "sock"
	)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true, ContainerdSockets: map[int]testbed.ContainerdSocket{
		2: {Path: linked, Link: true},
		3: {Path: real},
	}})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	manager := hosts[0].Gateway + ":8080"
	allClean := func() {
		t.Helper()
		for _, h := range hosts {
			hostClean(t, h)
		}
	}
	body := func(host3Socket string, host3Args map[string]string) map[string]any {
		b := clusterBody(cluster, manager, hosts)
		n3 := b["nodes"].([]map[string]any)[2]
		if host3Socket != "" {
			n3["containerdSocket"] = host3Socket
		}
		if host3Args != nil {
			n3["kubelet"].(map[string]any)["extraArgs"] = host3Args
		}
		return b
	}
	failedStep := func(want string) {
		t.Helper()
		_, c := admin.cluster(cluster)
		op, _ := c["lastOperation"].(map[string]any)
		e, _ := op["error"].(map[string]any)
		if e["step"] != want {
			t.Errorf("last operation %v: want it failed in step %s", op, want)
		}
	}

	// 1. The default path does not exist on host3.
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body("", nil), http.StatusCreated)
	admin.failedWith(t, cluster, "default containerd socket on host3", "host3",
		"/run/containerd/containerd.sock does not exist", "nodes[2].containerdSocket")
	failedStep("preflight")
	allClean()

	// 2. host3's kubelet cannot start.
	admin.mustDo(http.MethodPut, apiPath+"/clusters/"+cluster, body(real, map[string]string{"no-such-flag": "1"}), http.StatusOK)
	var workersSeen, workersShown bool
	start := time.Now()
	var workersStart time.Time
	frames, _ := admin.followZkelog(t, cluster, 0, 10*time.Minute, func(f zkelogFrame) {
		if f.Type != "progress" || f.Step != "workers" || workersSeen {
			return
		}
		workersSeen, workersStart = true, time.Now()
		// The step is saved as running before its first frame is
		// logged, so the cluster shows it now.
		_, c := admin.cluster(cluster)
		op, _ := c["lastOperation"].(map[string]any)
		workersShown = op["step"] == "workers" && op["index"] == float64(f.Index) && op["state"] == "running"
		if !workersShown {
			t.Errorf("while the workers step runs the cluster shows %v", op)
		}
	})
	if !workersSeen {
		logFrames(t, frames)
		t.Fatal("the workers step never started")
	}
	took := time.Since(workersStart)
	t.Logf("crash-looping kubelet: create failed after %s, %s in the workers step", time.Since(start).Round(time.Second), took.Round(time.Second))
	admin.failedWith(t, cluster, "crash-looping kubelet", "host3", "kubelet on host3 is not running", "no-such-flag")
	if reason := str(admin.waitStatus(cluster, "Unavailable", 10*time.Second)["reason"]); strings.Contains(reason, "kube-proxy on host3 healthy: not within") {
		t.Errorf("the reason blames kube-proxy, downstream of the kubelet: %s", reason)
	}
	if took >= 2*time.Minute {
		t.Errorf("the workers step waited %s for a kubelet that crash-loops", took)
	}
	failedStep("workers")

	// 3. Fixed.
	admin.mustDo(http.MethodPut, apiPath+"/clusters/"+cluster, body(real, nil), http.StatusOK)
	frames, _ = admin.followZkelog(t, cluster, 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("create with host3's socket set ended %+v", last)
	}
	c := admin.waitStatus(cluster, "Running", 30*time.Second)
	if op, _ := c["lastOperation"].(map[string]any); op["percent"] != float64(100) || op["state"] != "succeeded" {
		t.Errorf("last operation after success: %v", op)
	}
	resolved := false
	for _, f := range frames {
		resolved = resolved || (f.Type == "log" && f.Node == "host2" && strings.Contains(f.Message, "CRI runtime at /run/containerd/containerd.sock (→ "+linked+")"))
	}
	if !resolved {
		t.Error("preflight did not report host2's CRI socket resolved through its symlink")
	}
	ctx := context.Background()
	for h, dir := range map[*testbed.Host]string{hosts[1]: "/var/opt/ctrd", hosts[2]: "/var/lib/ctrd-real"} {
		out, err := h.Exec(ctx, "docker", "inspect", "-f", "{{json .HostConfig.Binds}}", "kubelet")
		if err != nil || !strings.Contains(out, `"`+dir+":"+dir+`"`) {
			t.Errorf("%s: kubelet binds %s (%v), want %s at the same path", h.Name, out, err, dir)
		}
	}
	kube := kubeClient(t, admin.kubeconfig(cluster))
	eventually(t, 2*time.Minute, "both workers Ready", func() (bool, string) {
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == 2, strings.Repeat("ready ", ready)
	})

	admin.deleteCluster(t, cluster, 3*time.Minute)
	allClean()
}
