package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// blockAPIServer makes h unable to reach the API server on cp (its kubelet
// then never registers) or, with block false, able again.
func blockAPIServer(t *testing.T, h, cp *testbed.Host, block bool) {
	t.Helper()
	op := "-I"
	if !block {
		op = "-D"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := h.Exec(ctx, "iptables", op, "OUTPUT", "-p", "tcp", "-d", cp.Address, "--dport", "6443", "-j", "REJECT", "--reject-with", "tcp-reset"); err != nil {
		t.Fatalf("%s: iptables %s: %v: %s", h.Name, op, err, out)
	}
}

// An install whose node cannot do its part does not sit silently: past the
// step's deadline the cluster shows the operation stalled, naming the node
// and what the step waits for, with a ClusterOperationStalled event and a
// stalled zkelog frame; every other operation on the busy cluster is
// refused with 409; a cancel settles within seconds; once the node is
// fixed, a retry skips what is verifiably done and finishes.
func TestStalledStepNamesTheNodeAndCancelSettles(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	events := admin.events(t)
	blockAPIServer(t, hosts[2], hosts[0], true)

	body := clusterBody("st", hosts[0].Gateway+":8080", hosts)
	body["stepDeadlines"] = map[string]string{"workers": "30s"}
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	admin.waitStep(t, "st", "workers")

	// Two operations never run at once on one cluster.
	status, resp := admin.do(http.MethodPut, apiPath+"/clusters/st", clusterBody("st", hosts[0].Gateway+":8080", hosts))
	expectError(t, "update during the create", status, resp, http.StatusConflict, "InvalidState", "Creating")
	status, resp = admin.do(http.MethodPost, apiPath+"/clusters/st?action=retry", nil)
	expectError(t, "retry during the create", status, resp, http.StatusConflict, "InvalidState", "Creating")
	status, resp = admin.do(http.MethodPost, apiPath+"/clusters/st?action=forgetHostKey", map[string]string{"node": "host3"})
	expectError(t, "forgetHostKey during the create", status, resp, http.StatusConflict, "InvalidState", "Creating")

	// Past the 30 s deadline (plus a generous margin for a busy machine).
	var stalled map[string]any
	eventually(t, 3*time.Minute, "the workers step shown stalled", func() (bool, string) {
		_, c := admin.cluster("st")
		op, _ := c["lastOperation"].(map[string]any)
		stalled, _ = op["stalled"].(map[string]any)
		return stalled != nil, str(op["step"])
	})
	t.Logf("stalled: %v", stalled)
	if stalled["step"] != "workers" || stalled["node"] != "host3" || str(stalled["waitingFor"]) == "" || str(stalled["since"]) == "" {
		t.Errorf("stalled %v, want step workers on node host3 with what it waits for", stalled)
	}
	timeout := time.After(time.Minute)
	for found := false; !found; {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream closed before the stalled event")
			}
			if ev["type"] != "ClusterOperationStalled" {
				continue
			}
			found = true
			if ev["cluster"] != "st" || !strings.Contains(str(ev["reason"]), "host3") {
				t.Errorf("stalled event %v", ev)
			}
		case <-timeout:
			t.Fatal("no ClusterOperationStalled event")
		}
	}

	canceled := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters/st?action=cancel", nil, http.StatusOK)
	admin.waitStatus("st", "Unavailable", 5*time.Second)
	t.Logf("cancel during workers settled in %s", time.Since(canceled).Round(time.Millisecond))
	frames, _ := admin.followZkelog(t, "st", 0, time.Minute, nil)
	sawStall := false
	for _, f := range frames {
		sawStall = sawStall || (f.Type == "stalled" && f.Node == "host3" && f.Step == "workers")
	}
	if !sawStall {
		logFrames(t, frames)
		t.Error("the zkelog has no stalled frame naming host3")
	}

	blockAPIServer(t, hosts[2], hosts[0], false)
	admin.mustDo(http.MethodPost, apiPath+"/clusters/st?action=retry", nil, http.StatusOK)
	frames, _ = admin.followZkelog(t, "st", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("the retry ended %+v", last)
	}
	skipped := map[string]bool{}
	for _, f := range frames {
		if f.Type == "progress" && f.Skipped {
			skipped[f.Step] = true
		}
	}
	for _, step := range []string{"certificates", "images", "etcd", "controlplane"} {
		if !skipped[step] {
			t.Errorf("the retry redid step %s", step)
		}
	}
	_, c := admin.cluster("st")
	if op, _ := c["lastOperation"].(map[string]any); op["stalled"] != nil {
		t.Errorf("the finished operation still shows a stall: %v", op["stalled"])
	}
	ops := admin.mustDo(http.MethodGet, apiPath+"/clusters/st/operations", nil, http.StatusOK)
	data, _ := ops["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("history has %d operations, want the cancelled create and the retry", len(data))
	}
	retry, _ := data[0].(map[string]any)
	first, _ := data[1].(map[string]any)
	if retry["state"] != "succeeded" || first["state"] != "canceled" || first["kind"] != "create" {
		t.Errorf("history %v / %v, want the retry succeeded after the create canceled", retry["state"], first["state"])
	}
}
