package e2e

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// waitStep follows the zkelog until a progress frame of step arrives.
func (c *client) waitStep(t *testing.T, cluster, step string) {
	t.Helper()
	found := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var once bool
		c.followZkelogUntil(t, cluster, 5*time.Minute, func(f zkelogFrame) bool {
			if f.Type == "progress" && f.Step == step && !once {
				once = true
				close(found)
				return true
			}
			return false
		})
	}()
	select {
	case <-found:
	case <-done:
		t.Fatalf("the operation on %s ended before step %s", cluster, step)
	}
	<-done
}

// caOf reads the cluster CA a node holds.
func caOf(t *testing.T, h *testbed.Host) string {
	t.Helper()
	out, err := h.Exec(context.Background(), "cat", "/etc/kubernetes/ssl/kube-ca.pem")
	if err != nil {
		t.Fatalf("%s: read the CA: %v", h.Name, err)
	}
	return out
}

// zkeContainers counts zke's containers per name on h.
func zkeContainers(t *testing.T, h *testbed.Host) map[string]int {
	t.Helper()
	out, err := h.Exec(context.Background(), "docker", "ps", "-a", "--filter", "label=io.zke.managed=true", "--format", "{{.Names}}")
	if err != nil {
		t.Fatalf("%s: docker ps: %v", h.Name, err)
	}
	counts := map[string]int{}
	for _, n := range strings.Fields(out) {
		counts[n]++
	}
	return counts
}

func TestCancelDuringEtcdThenRetry(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	admin.mustDo(http.MethodPost, apiPath+"/clusters", clusterBody("c1", hosts[0].Gateway+":8080", hosts), http.StatusCreated)
	admin.waitStep(t, "c1", "etcd")

	canceled := time.Now()
	body := admin.mustDo(http.MethodPost, apiPath+"/clusters/c1?action=cancel", nil, http.StatusOK)
	if s := str(body["status"]); s != "Canceling" && s != "Unavailable" {
		t.Errorf("cancel answered %s", s)
	}
	c := admin.waitStatus("c1", "Unavailable", 5*time.Second)
	t.Logf("cancel → Unavailable in %s: %s", time.Since(canceled).Round(time.Millisecond), c["reason"])
	if !strings.Contains(str(c["reason"]), "canceled") {
		t.Errorf("reason %q", c["reason"])
	}
	ca := caOf(t, hosts[0])

	admin.mustDo(http.MethodPost, apiPath+"/clusters/c1?action=retry", nil, http.StatusOK)
	frames, _ := admin.followZkelog(t, "c1", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("retry ended %+v", last)
	}
	if caOf(t, hosts[0]) != ca {
		t.Error("the retry changed the cluster CA")
	}
	for _, h := range hosts {
		for name, n := range zkeContainers(t, h) {
			if n != 1 {
				t.Errorf("%s: %d containers named %s", h.Name, n, name)
			}
		}
	}
	shrinkEtcd(t, admin, hosts)
}

// shrinkEtcd removes an etcd member's node (host3) from a Running
// 3-member cluster: the removals the cluster cannot survive are refused
// with 422 first, then etcd keeps its two other members, the API answers,
// and host3 is cleaned.
func shrinkEtcd(t *testing.T, admin *client, hosts []*testbed.Host) {
	t.Helper()
	manager := hosts[0].Gateway + ":8080"
	status, resp := admin.do(http.MethodPut, apiPath+"/clusters/c1", clusterBody("c1", manager, hosts[1:]))
	expectError(t, "remove the API endpoint", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "host1", "API endpoint")
	status, resp = admin.do(http.MethodPut, apiPath+"/clusters/c1", clusterBody("c1", manager, hosts[:1]))
	expectError(t, "remove two of three etcd members", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "not a majority")

	admin.mustDo(http.MethodPut, apiPath+"/clusters/c1", clusterBody("c1", manager, hosts[:2]), http.StatusOK)
	frames, _ := admin.followZkelog(t, "c1", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("removing host3 ended %+v", last)
	}
	checkEtcdMembers(t, hosts[0], "host1", "host2")
	hostClean(t, hosts[2])
	nodes, err := kubeClient(t, admin.kubeconfig("c1")).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("the API after removing an etcd member: %v", err)
	}
	for _, n := range nodes.Items {
		if n.Name == hosts[2].Name {
			t.Errorf("node %s is still registered", n.Name)
		}
	}
}

// A create killed (kill -9 of singlecloud) during its last steps resumes
// at the next start without redoing what it had done: every earlier step
// is verified in place and reported "skipped (verified)", and the resumed
// install takes a fraction of a fresh one's time (a ratio measured in
// this run, so a slow machine slows both sides).
func TestInstallResumesAfterKill(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	began := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", clusterBody("c2", hosts[0].Gateway+":8080", hosts), http.StatusCreated)
	admin.waitStep(t, "c2", "addons")
	reached := time.Since(began)

	restarted := time.Now()
	inst.restart(syscall.SIGKILL)
	admin = inst.admin(t)
	if s := admin.status("c2"); s != "Creating" {
		t.Errorf("after kill -9 the cluster is %q, want Creating (resumed)", s)
	}
	c := admin.waitStatus("c2", "Running", 10*time.Minute)
	resumed := time.Since(restarted)
	if c["version"] != testbed.KubeVersion {
		t.Errorf("version %v", c["version"])
	}
	// The log of the interrupted run was kept and the resumed run appended.
	frames, _ := admin.followZkelog(t, "c2", 0, time.Minute, nil)
	var connects int
	skipped := map[string]bool{}
	var lastAddons time.Time
	for _, f := range frames {
		if f.Type == "progress" && f.Step == "connect" && f.Message == "started" {
			connects++
		}
		if f.Type == "progress" && f.Skipped {
			if f.Message != "skipped (verified)" {
				t.Errorf("skipped step %s says %q", f.Step, f.Message)
			}
			skipped[f.Step] = true
		}
		if f.Type == "progress" && f.Step == "addons" && f.Message == "started" {
			lastAddons = f.Time
		}
	}
	if connects != 2 {
		t.Errorf("the log shows %d runs, want the interrupted one and the resumed one", connects)
	}
	for _, step := range []string{"certificates", "images", "etcd", "controlplane", "workers", "network"} {
		if !skipped[step] {
			t.Errorf("the resumed run redid step %s instead of verifying it", step)
		}
	}
	// What a fresh install takes: the interrupted run's time up to
	// addons, plus the time from addons to the end (the resumed run's).
	tailTook := frames[len(frames)-1].Time.Sub(lastAddons)
	fresh := reached + tailTook
	ratio := float64(resumed) / float64(fresh)
	t.Logf("fresh install ≈ %s (%s to addons + %s after), resumed install %s: ratio %.2f",
		fresh.Round(time.Second), reached.Round(time.Second), tailTook.Round(time.Second), resumed.Round(time.Second), ratio)
	if lastAddons.IsZero() || ratio > 0.75 {
		t.Errorf("the resumed install took %.0f%% of a fresh one's time, want a fraction (≤ 75%%)", 100*ratio)
	}
	ops := admin.mustDo(http.MethodGet, apiPath+"/clusters/c2/operations", nil, http.StatusOK)
	data, _ := ops["data"].([]any)
	if len(data) == 0 {
		t.Fatalf("no operation history: %v", ops)
	}
	first, _ := data[0].(map[string]any)
	if first["kind"] != "create" || first["state"] != "succeeded" || first["startedBy"] != "admin" {
		t.Errorf("newest operation %v, want the create, succeeded, started by admin", first)
	}
	for _, h := range hosts {
		for name, n := range zkeContainers(t, h) {
			if n != 1 {
				t.Errorf("%s: %d containers named %s", h.Name, n, name)
			}
		}
	}
}
