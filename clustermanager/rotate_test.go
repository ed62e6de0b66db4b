package clustermanager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke"
)

// A certificate rotation is an operation like the others: it runs in
// Updating on the worker, ends Running, and joins the history; what it
// cannot do is refused naming the field.
func TestRotateCertificates(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	ctx := WithActor(context.Background(), "alice")
	if _, err := h.m.RotateCertificates(ctx, "nope", RotateOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("rotate of an unknown cluster = %v", err)
	}
	if _, err := h.m.Create(ctx, createConfig(t, "r")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.RotateCertificates(ctx, "r", RotateOptions{}); !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Errorf("rotate during the create = %v, want a refusal", err)
	}
	h.waitStatus("r", fsm.StateRunning, waitBound)
	c, err := h.m.RotateCertificates(ctx, "r", RotateOptions{})
	if err != nil || c.Status != fsm.StateUpdating || c.LastOperation.Type != OpRotateCertificates {
		t.Fatalf("rotate = %s %+v, %v; want Updating with the rotation running", c.Status, c.LastOperation, err)
	}
	h.waitStatus("r", fsm.StateRunning, waitBound)
	h.settle("r")
	if calls := inst.callList(); calls != "create,rotate" {
		t.Errorf("installer calls %q", calls)
	}
	if prev := inst.lastPrev(); prev.CAPhase != "" {
		t.Errorf("a leaf rotation asked the installer for a CA rotation (%q)", prev.CAPhase)
	}
	// A CA rotation is the same operation with the request in the
	// installer's state; the finished rotation clears it.
	if _, err := h.m.RotateCertificates(ctx, "r", RotateOptions{CA: true}); err != nil {
		t.Fatalf("CA rotation: %v", err)
	}
	h.waitStatus("r", fsm.StateRunning, waitBound)
	h.settle("r")
	if prev := inst.lastPrev(); prev.CAPhase != zke.CAPhaseRequested {
		t.Errorf("the installer was handed CA phase %q, want %q", prev.CAPhase, zke.CAPhaseRequested)
	}
	if e, _ := h.m.lookup("r"); unfinishedRotation(e.record()) {
		t.Error("a finished CA rotation still counts as unfinished")
	}
	ops, err := h.m.Operations("r")
	if err != nil || len(ops) != 3 || ops[0].Type != OpRotateCertificates || ops[0].State != OpSucceeded || ops[0].StartedBy != "alice" {
		t.Errorf("history %+v (%v), want the rotation first, succeeded, by alice", ops, err)
	}

	imp := newAPIServer(t, "good")
	if _, err := h.m.Import(ctx, model.ImportRequest{Name: "imp", Kubeconfig: imp.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("imp", fsm.StateRunning, waitBound)
	if _, err := h.m.RotateCertificates(ctx, "imp", RotateOptions{}); !errors.Is(err, validation.ErrInvalid) {
		t.Errorf("rotate of an imported cluster = %v, want a field error", err)
	}
}

// A rotation is refused while a node change is pending (it would apply
// it half way), and an update is refused while a rotation is unfinished
// (components may still run on the old certificates).
func TestRotationGuards(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	ctx := context.Background()
	cfg := createConfig(t, "g")
	if _, err := h.m.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("g", fsm.StateRunning, waitBound)
	h.settle("g")
	e, _ := h.m.lookup("g")
	edit := func(fn func(*record)) {
		t.Helper()
		if err := h.m.repo.edit(e, func(next *record) bool { fn(next); return true }); err != nil {
			t.Fatal(err)
		}
	}
	edit(func(r *record) { r.Config.Nodes = r.Config.Nodes[:len(r.Config.Nodes)-1] })
	if _, err := h.m.RotateCertificates(ctx, "g", RotateOptions{}); !errors.Is(err, validation.ErrInvalid) {
		t.Errorf("rotate with a pending node change = %v, want a field error", err)
	}
	edit(func(r *record) {
		r.Config.Nodes = append(r.Config.Nodes, cfg.Nodes[len(cfg.Nodes)-1])
		now := time.Now()
		r.secrets.ZKE.RotateBefore = &now
	})
	update := createConfig(t, "g")
	update.SSHKey = ""
	if _, err := h.m.Update(ctx, "g", update); !errors.Is(err, validation.ErrInvalid) {
		t.Errorf("update with an unfinished rotation = %v, want a field error", err)
	}
	edit(func(r *record) {
		r.secrets.ZKE.RotateBefore = nil
		r.secrets.ZKE.CAPhase = zke.CAPhaseReissue
	})
	if _, err := h.m.Update(ctx, "g", update); !errors.Is(err, validation.ErrInvalid) {
		t.Errorf("update with an unfinished CA rotation = %v, want a field error", err)
	}
	if calls := inst.callList(); calls != "create" {
		t.Errorf("installer calls %q, want only the create", calls)
	}
}

// A rotation that fails after it wrote a new admin kubeconfig (the old
// one revoked, or its CA half-replaced) leaves that one stored: it is the
// one that reaches the cluster now.
func TestFailedRotationKeepsItsNewKubeconfig(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	ctx := context.Background()
	if _, err := h.m.Create(ctx, createConfig(t, "k")); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("k", fsm.StateRunning, waitBound)
	h.settle("k")
	inst.mu.Lock()
	inst.failStep, inst.failKubeconfig = "kubeconfig", "the new kubeconfig"
	inst.mu.Unlock()
	if _, err := h.m.RotateCertificates(ctx, "k", RotateOptions{CA: true}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("k", fsm.StateUnavailable, waitBound)
	h.settle("k")
	e, _ := h.m.lookup("k")
	if got := string(e.record().secrets.Kubeconfig); got != "the new kubeconfig" {
		t.Errorf("stored kubeconfig %q after the failed rotation, want the one it wrote", got)
	}
	if !unfinishedRotation(e.record()) {
		t.Error("a failed CA rotation does not count as unfinished")
	}
}
