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
	inst := &stepInstaller{kubeconfig: api.kubeconfig(), block: block}
	h := newInstallHarness(t, nil, inst)
	if _, err := h.m.Create(context.Background(), createConfig(t, "p")); err != nil {
		t.Fatal(err)
	}
	// The installer blocks in step etcd (3/4) after checkpointing connect
	// and certificates. The store is written before memory, so the view
	// is what is awaited; the store must agree with it then.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := h.m.Get("p")
		if err == nil && c.LastOperation != nil && c.LastOperation.Step == "etcd" {
			op := c.LastOperation
			if op.Index != 3 || op.Total != 4 || op.Percent != 50 || op.State != OpRunning {
				t.Fatalf("last operation while etcd runs: %+v, want etcd 3/4 at 50%% running", op)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last operation while etcd runs: %+v (err %v), want step etcd", c.LastOperation, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec, err := h.storedStatus("p")
	if err != nil || rec.LastOperation == nil || rec.LastOperation.Step != "etcd" || rec.secrets.ZKE == nil || len(rec.secrets.ZKE.Checkpoints) != 2 {
		t.Fatalf("stored record while etcd runs: %+v (err %v), want step etcd after 2 checkpoints", rec, err)
	}
	close(block)
	c := h.waitStatus("p", fsm.StateRunning, 10*time.Second)
	if op := c.LastOperation; op.State != OpSucceeded || op.Step != "kubeconfig" || op.Index != 4 || op.Percent != 100 {
		t.Errorf("last operation after success: %+v", op)
	}
}
