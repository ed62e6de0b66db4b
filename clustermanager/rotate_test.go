package clustermanager

import (
	"context"
	"errors"
	"testing"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
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
	if _, err := h.m.RotateCertificates(ctx, "r", RotateOptions{CA: true}); !errors.Is(err, validation.ErrInvalid) {
		t.Errorf("CA rotation = %v, want a field error", err)
	}
	c, err := h.m.RotateCertificates(ctx, "r", RotateOptions{})
	if err != nil || c.Status != fsm.StateUpdating || c.LastOperation.Type != OpRotateCertificates {
		t.Fatalf("rotate = %s %+v, %v; want Updating with the rotation running", c.Status, c.LastOperation, err)
	}
	h.waitStatus("r", fsm.StateRunning, waitBound)
	h.settle("r")
	if calls := inst.callList(); calls != "create,rotate" {
		t.Errorf("installer calls %q", calls)
	}
	ops, err := h.m.Operations("r")
	if err != nil || len(ops) != 2 || ops[0].Type != OpRotateCertificates || ops[0].State != OpSucceeded || ops[0].StartedBy != "alice" {
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
