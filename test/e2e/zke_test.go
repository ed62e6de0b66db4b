package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

func TestCreateClusterOnHosts(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	all := testbed.StartHosts(t, 4, testbed.HostOptions{Docker: true})
	hosts := all[:3]
	inst := startInstance(t, "")
	admin := inst.admin(t)
	manager := hosts[0].Gateway + ":8080"
	foreign2, foreign4 := startForeign(t, all[1]), startForeign(t, all[3])
	ctr2, ctr3, ctr4 := startForeignCtr(t, all[1]), startForeignCtr(t, all[2]), startForeignCtr(t, all[3])

	body := admin.mustDo(http.MethodPost, apiPath+"/clusters", clusterBody("prod", manager, hosts), http.StatusCreated)
	if body["status"] != "Creating" {
		t.Fatalf("create answered %v", body)
	}
	if strings.Contains(mustJSON(t, body), "PRIVATE KEY") {
		t.Fatal("create answer echoes the SSH key")
	}
	start := time.Now()
	var lastPercent int
	frames, code := admin.followZkelog(t, "prod", 0, 10*time.Minute, func(f zkelogFrame) {
		if f.Type == "progress" {
			if f.Percent < lastPercent {
				t.Errorf("progress went back from %d to %d at %+v", lastPercent, f.Percent, f)
			}
			lastPercent = f.Percent
		}
	})
	t.Logf("create took %s, %d frames", time.Since(start).Round(time.Second), len(frames))
	if len(frames) == 0 || frames[len(frames)-1].Type != "result" || frames[len(frames)-1].Status != "Running" || code != 1000 {
		logFrames(t, frames)
		t.Fatalf("create did not end Running: last %+v, close code %d", tail(frames, 3), code)
	}
	for i, f := range frames {
		if f.Seq != uint64(i+1) {
			t.Fatalf("frame %d has seq %d: the log has a gap", i, f.Seq)
		}
	}
	// The hosts' containerd found no CNI plugin: zke installed them from
	// the mirror's release tarball on each worker.
	installed := map[string]bool{}
	for _, f := range frames {
		if f.Step == "artifacts" && strings.HasPrefix(f.Message, "installed CNI plugins bridge, host-local, portmap, loopback ("+testbed.CNIVersion+") in ") {
			installed[f.Node] = true
		}
	}
	if !installed["host2"] || !installed["host3"] {
		logFrames(t, frames)
		t.Errorf("the artifacts step did not report the CNI plugins installed on each worker: %v", installed)
	}
	c := admin.waitStatus("prod", "Running", 30*time.Second)
	if c["version"] != testbed.KubeVersion {
		t.Errorf("version %v", c["version"])
	}
	checkCertificateCalendar(t, admin, "prod", hosts[0])
	// A later reader gets the whole log, then a clean close.
	again, code := admin.followZkelog(t, "prod", 0, time.Minute, nil)
	if len(again) != len(frames) || code != 1000 {
		t.Errorf("replay: %d frames close %d, want %d and 1000", len(again), code, len(frames))
	}
	since, code := admin.followZkelog(t, "prod", frames[len(frames)-3].Seq, time.Minute, nil)
	if len(since) != 2 || code != 1000 {
		t.Errorf("?since= replay gave %d frames, want 2", len(since))
	}

	kube := kubeClient(t, admin.kubeconfig("prod"))
	ctx := context.Background()
	v, err := kube.Discovery().ServerVersion()
	if err != nil || v.GitVersion != testbed.KubeVersion {
		t.Fatalf("version through the kubeconfig: %v %v", v, err)
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 2 {
		t.Fatalf("%d nodes registered, want the 2 workers", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		ready := false
		for _, cond := range n.Status.Conditions {
			ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
		}
		if !ready || n.Labels["zke.test/worker"] != n.Name || n.Labels["node-role.kubernetes.io/worker"] != "true" {
			t.Errorf("node %s: ready %v labels %v", n.Name, ready, n.Labels)
		}
		var ours []corev1.Taint
		for _, taint := range n.Spec.Taints {
			if !strings.HasPrefix(taint.Key, "node.kubernetes.io/") { // the node controller's own
				ours = append(ours, taint)
			}
		}
		if len(ours) != 1 || ours[0].Key != "zke.test/dedicated" || ours[0].Value != "e2e" || ours[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("node %s taints %v", n.Name, n.Spec.Taints)
		}
	}

	// etcd: three healthy voting members.
	checkEtcdMembers(t, hosts[0], "host1", "host2", "host3")

	// A pod from the test busybox image runs on a worker; its logs are
	// readable through the API (API server → kubelet).
	pod := busyboxPod("hello", corev1.RestartPolicyNever, "sh", "-c", "echo hello from $(hostname); sleep 3600")
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "pod hello running", func() (bool, string) {
		p, err := kube.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase) + " on " + p.Spec.NodeName
	})
	eventually(t, time.Minute, "pod logs", func() (bool, string) {
		rc, err := kube.CoreV1().Pods("default").GetLogs("hello", &corev1.PodLogOptions{}).Stream(ctx)
		if err != nil {
			return false, err.Error()
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return strings.Contains(string(b), "hello from hello"), string(b)
	})

	// Cluster DNS works: a pod resolves the kubernetes service through
	// CoreDNS on the cluster DNS IP.
	checkClusterDNS(t, kube)
	checkCoreDNSCalm(t, kube)
	// Pod traffic between nodes keeps pod addresses.
	checkPodAddressKept(t, kube, "peer", "host2", "host3")
	// A worker rebooted (its processes killed, its links, routes, rules
	// and mounts gone, its daemons started again) gets its host-gw routes
	// back from flanneld, whose pod its kubelet restarts: its pods reach
	// the other worker's by their own addresses again.
	rebooted := time.Now()
	if err := hosts[2].Reboot(ctx); err != nil {
		t.Fatalf("reboot %s: %v", hosts[2].Name, err)
	}
	// The reboot stopped the foreign containerd container too: started
	// again, as its owner would, it is what the end of the test checks.
	if out, err := hosts[2].Run(ctx, "ctr -n k8s.io tasks rm -f not-zke-ctr >/dev/null 2>&1; ctr -n k8s.io tasks start -d not-zke-ctr"); err != nil {
		t.Fatalf("%s: start the foreign containerd container again: %v: %s", hosts[2].Name, err, out)
	}
	checkPodAddressKept(t, kube, "after-reboot", "host2", "host3")
	if out, err := hosts[2].Run(ctx, "ip -4 route show root 10.42.0.0/16; iptables -t nat -S FLANNEL-POSTRTG"); err != nil ||
		!strings.Contains(out, " via "+hosts[1].Address+" ") || !strings.Contains(out, "MASQUERADE") {
		t.Errorf("after its reboot %s lacks the route to host2's pods or flannel's nat rules (%v):\n%s", hosts[2].Name, err, out)
	}
	t.Logf("%s rebooted: pod routes back in %s", hosts[2].Name, time.Since(rebooted).Round(time.Second))

	// An etcd snapshot, taken, drilled, downloaded.
	snapID := checkSnapshot(t, admin, inst, kube, "prod")
	// Restored: what was written after it is gone, etcd whole.
	checkRestore(t, admin, kube, "prod", snapID, hosts[0], "host1", "host2", "host3")

	// host2 as an earlier release's bridge network left it: its route to
	// host3's pods set by zke (proto 77), zke's nat chain, and the boot
	// of those on its Node.
	legacy := plantLegacyBridge(t, kube, hosts[1], hosts[2])

	// Add a worker; an automatic snapshot comes first.
	admin.mustDo(http.MethodPut, apiPath+"/clusters/prod", clusterBody("prod", manager, all), http.StatusOK)
	frames, _ = admin.followZkelog(t, "prod", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("adding a worker ended %+v", last)
	}
	// The update's network step moved host2 to flanneld: the route
	// adopted as it is, the chain and the annotation gone.
	legacy()
	checkPinnedSnapshot(t, admin, "prod", "update")
	eventually(t, time.Minute, "host4 Ready", func() (bool, string) {
		n, err := kube.CoreV1().Nodes().Get(ctx, "host4", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, c.Reason
			}
		}
		return false, "no Ready condition"
	})

	// Remove it again: drained, deleted from Kubernetes, its host cleaned;
	// the container that is not zke's keeps running.
	admin.mustDo(http.MethodPut, apiPath+"/clusters/prod", clusterBody("prod", manager, hosts), http.StatusOK)
	frames, _ = admin.followZkelog(t, "prod", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("removing a worker ended %+v", last)
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, "host4", metav1.GetOptions{}); err == nil {
		t.Error("removed worker host4 is still a Kubernetes node")
	}
	hostClean(t, all[3])
	foreign4()
	ctr4()
	// Removing the controlplane node every kubelet uses is refused and
	// changes nothing.
	status, resp := admin.do(http.MethodPut, apiPath+"/clusters/prod", clusterBody("prod", manager, hosts[1:]))
	expectError(t, "remove the endpoint controlplane node", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "host1", "API endpoint")
	if s := admin.status("prod"); s != "Running" {
		t.Errorf("a refused update left the cluster %s", s)
	}

	// Rotate the leaf certificates: all reissued from the same CAs, every
	// component restarted on them, the API answering with the new
	// admin kubeconfig.
	rotateCertificates(t, admin, "prod", hosts[0], "host1", "host2", "host3")
	checkPinnedSnapshot(t, admin, "prod", "rotateCertificates")
	deleteSnapshot(t, admin, "prod", snapID)

	// Delete the cluster: every host clean.
	del := admin.mustDo(http.MethodDelete, apiPath+"/clusters/prod", nil, http.StatusAccepted)
	if del["status"] != "Deleting" {
		t.Errorf("delete answered %v", del["status"])
	}
	eventually(t, 5*time.Minute, "cluster prod deleted", func() (bool, string) {
		code, body := admin.cluster("prod")
		return code == http.StatusNotFound, str(body["status"]) + " " + str(body["reason"])
	})
	for _, h := range hosts {
		hostClean(t, h)
	}
	if files, err := os.ReadDir(filepath.Join(inst.dir, "snapshots", "prod")); err == nil && len(files) > 0 {
		t.Errorf("the deleted cluster's snapshots are still on disk: %d files", len(files))
	}
	foreign2()
	ctr2()
	ctr3()
}
