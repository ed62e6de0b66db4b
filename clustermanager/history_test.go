package clustermanager

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

func TestOperationHistoryRecordsWhoWhatAndSteps(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	ctx := WithActor(context.Background(), "alice")
	if _, err := h.m.Create(ctx, createConfig(t, "h")); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("h", fsm.StateRunning, 10*time.Second)
	ops, err := h.m.Operations("h")
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 {
		t.Fatalf("history has %d operations, want the create", len(ops))
	}
	op := ops[0]
	if op.Type != OpCreate || op.State != OpSucceeded || op.StartedBy != "alice" || op.EndedAt == nil || op.Error != nil {
		t.Errorf("history entry %+v", op)
	}
	if len(op.Steps) != 4 || op.Steps[0].Name != "connect" || op.Steps[3].Index != 4 {
		t.Errorf("steps %+v, want the installer's four with their places", op.Steps)
	}
	if _, err := h.m.Operations("nope"); err == nil {
		t.Error("history of an unknown cluster answered")
	}
}

func TestHistoryKeepsTheLastFifty(t *testing.T) {
	store := storagetest.Open(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range historyLimit + 5 {
		op := Operation{Type: OpUpdate, State: OpSucceeded, StartedAt: base.Add(time.Duration(i) * time.Minute)}
		b, _ := json.Marshal(op)
		err := store.Update(func(tx storage.Tx) error { return appendHistory(tx, "c", op.StartedAt, b) })
		if err != nil {
			t.Fatal(err)
		}
	}
	// Another cluster's history is not trimmed with c's.
	other := Operation{Type: OpCreate, StartedAt: base}
	b, _ := json.Marshal(other)
	if err := store.Update(func(tx storage.Tx) error { return appendHistory(tx, "c2", base, b) }); err != nil {
		t.Fatal(err)
	}
	r := &repository{store: store}
	ops, err := r.history("c")
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != historyLimit {
		t.Fatalf("%d operations kept, want %d", len(ops), historyLimit)
	}
	newest, oldest := base.Add((historyLimit+4)*time.Minute), base.Add(5*time.Minute)
	if !ops[0].StartedAt.Equal(newest) || !ops[len(ops)-1].StartedAt.Equal(oldest) {
		t.Errorf("kept %s … %s, want newest first from %s down to %s", ops[0].StartedAt, ops[len(ops)-1].StartedAt, newest, oldest)
	}
	if ops2, _ := r.history("c2"); len(ops2) != 1 {
		t.Errorf("c2 has %d operations", len(ops2))
	}
}

func TestETALearnsStepDurations(t *testing.T) {
	store := storagetest.Open(t)
	m := &etaModel{}
	m.load(store)
	if eta := m.estimate(OpCreate, 1, 3, 3, 0); eta != nil {
		t.Fatalf("estimate with nothing learnt = %d, want none", *eta)
	}
	run := func(secs ...float64) *Operation {
		op := &Operation{Type: OpCreate, State: OpSucceeded, Total: len(secs)}
		for i, s := range secs {
			op.Steps = append(op.Steps, StepTiming{Name: fmt.Sprint("s", i+1), Index: i + 1, Seconds: s})
		}
		return op
	}
	m.learn(store, run(10, 20, 30), 3)
	tests := []struct {
		index   int
		elapsed float64
		nodes   int
		want    int
	}{
		{1, 0, 3, 60},
		{2, 0, 3, 50},
		{2, 5, 3, 45},
		{3, 100, 3, 0}, // over the estimate: nothing left, not negative
		{1, 0, 2, 60},  // 2 and 3 nodes are one size group
	}
	for _, tt := range tests {
		eta := m.estimate(OpCreate, tt.index, 3, tt.nodes, tt.elapsed)
		if eta == nil || *eta != tt.want {
			t.Errorf("estimate(step %d, %gs in, %d nodes) = %v, want %d", tt.index, tt.elapsed, tt.nodes, eta, tt.want)
		}
	}
	if eta := m.estimate(OpCreate, 1, 3, 40, 0); eta != nil {
		t.Errorf("a cluster size never measured got an estimate %d", *eta)
	}
	// Newer runs weigh more than older ones, skipped steps not at all,
	// failed operations not at all.
	skipped := run(100, 100, 100)
	skipped.Steps[0].Skipped = true
	m.learn(store, skipped, 3)
	failed := run(1000, 1000, 1000)
	failed.State = OpFailed
	m.learn(store, failed, 3)
	want := 10 + (0.7*20 + 0.3*100) + (0.7*30 + 0.3*100)
	if eta := m.estimate(OpCreate, 1, 3, 3, 0); eta == nil || *eta != int(want+0.5) {
		t.Errorf("after a second run the estimate is %v, want %d", eta, int(want+0.5))
	}
	// What was learnt survives a restart.
	again := &etaModel{}
	again.load(store)
	if eta := again.estimate(OpCreate, 1, 3, 3, 0); eta == nil || *eta != int(want+0.5) {
		t.Errorf("after reload the estimate is %v, want %d", eta, int(want+0.5))
	}
}
