package clustermanager

import (
	"context"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
)

// While a step runs, the cluster's last operation names that step, not the
// last one that finished (issue 8: "controlplane 6/10" was shown for the
// whole time the workers step waited).
func TestLastOperationShowsTheRunningStep(t *testing.T) {
	api := newAPIServer(t, "good")
	block := make(chan struct{})
	inst := &stepInstaller{kubeconfig: api.kubeconfig(), block: block, blocked: make(chan struct{})}
	h := newInstallHarness(t, nil, inst)
	if _, err := h.m.Create(context.Background(), createConfig(t, "p")); err != nil {
		t.Fatal(err)
	}
	// The installer blocks in step etcd (3/4) after checkpointing connect
	// and certificates and reporting etcd's start, which the manager saves
	// (store, then memory) before the installer goes on. The view must
	// show etcd then, and the store agree with it.
	waitDone(t, inst.blocked, "the create reaching etcd")
	c, err := h.m.Get("p")
	if err != nil || c.LastOperation == nil || c.LastOperation.Step != "etcd" {
		t.Fatalf("last operation while etcd runs: %+v (err %v), want step etcd", c.LastOperation, err)
	}
	if op := c.LastOperation; op.Index != 3 || op.Total != 4 || op.Percent != 50 || op.State != OpRunning {
		t.Fatalf("last operation while etcd runs: %+v, want etcd 3/4 at 50%% running", op)
	}
	rec, err := h.storedStatus("p")
	if err != nil || rec.LastOperation == nil || rec.LastOperation.Step != "etcd" || rec.secrets.ZKE == nil || len(rec.secrets.ZKE.Checkpoints) != 2 {
		t.Fatalf("stored record while etcd runs: %+v (err %v), want step etcd after 2 checkpoints", rec, err)
	}
	close(block)
	c = h.waitStatus("p", fsm.StateRunning, 10*time.Second)
	if op := c.LastOperation; op.State != OpSucceeded || op.Step != "kubeconfig" || op.Index != 4 || op.Percent != 100 {
		t.Errorf("last operation after success: %+v", op)
	}
}
