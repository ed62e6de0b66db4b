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

// cutOff takes h off the network (its default route's link down), as if it
// died: its kubelet stops reporting and SSH to it times out. The link is
// brought back up at cleanup so that the testbed stops it as usual.
func cutOff(t *testing.T, h *testbed.Host) {
	t.Helper()
	const dev = `$(ip route show default | awk '{print $5; exit}')`
	if out, err := h.Run(context.Background(), "ip link set "+dev+" down"); err != nil {
		t.Fatalf("%s: take the link down: %v: %s", h.Name, err, out)
	}
	t.Cleanup(func() {
		_, _ = h.Run(context.Background(), "for l in /sys/class/net/*; do ip link set \"${l##*/}\" up; done")
	})
}

// A worker that died cannot be drained gracefully nor cleaned over SSH;
// removing it must still succeed: its pods are force-deleted, its Node is
// deleted, and the log says it was left as it is.
func TestRemoveDeadWorker(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	all := testbed.StartHosts(t, 4, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	manager := all[0].Gateway + ":8080"
	admin.mustDo(http.MethodPost, apiPath+"/clusters", clusterBody("dead", manager, all), http.StatusCreated)
	frames, _ := admin.followZkelog(t, "dead", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("create ended %+v", last)
	}
	kube := kubeClient(t, admin.kubeconfig("dead"))
	ctx := context.Background()
	// A pod on the worker that is about to die: once the node is gone
	// nobody confirms its deletion but the drain.
	pod := busyboxPod("stuck", corev1.RestartPolicyNever, "sleep", "3600")
	pod.Spec.NodeName = "host4"
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "pod stuck running", func() (bool, string) {
		p, err := kube.CoreV1().Pods("default").Get(ctx, "stuck", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})

	cutOff(t, all[3])
	start := time.Now()
	admin.mustDo(http.MethodPut, apiPath+"/clusters/dead", clusterBody("dead", manager, all[:3]), http.StatusOK)
	frames, _ = admin.followZkelog(t, "dead", 0, 10*time.Minute, nil)
	t.Logf("removing the dead worker took %s", time.Since(start).Round(time.Second))
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("removing a dead worker ended %+v", last)
	}
	var forced, leftWarning bool
	for _, f := range frames {
		if f.Type == "log" && f.Node == "host4" && f.Level == "warn" {
			t.Logf("warning: %s", f.Message)
			forced = forced || strings.Contains(f.Message, "force-deleting")
			leftWarning = leftWarning || strings.Contains(f.Message, "left as it is; clean it by hand")
		}
	}
	if !forced || !leftWarning {
		logFrames(t, frames)
		t.Errorf("the log lacks the warnings (force-deleted pods %v, left as it is %v)", forced, leftWarning)
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, "host4", metav1.GetOptions{}); err == nil {
		t.Error("dead worker host4 is still a Kubernetes node")
	}
	if _, err := kube.CoreV1().Pods("default").Get(ctx, "stuck", metav1.GetOptions{}); err == nil {
		t.Error("pod stuck on the dead worker was not deleted")
	}
}
