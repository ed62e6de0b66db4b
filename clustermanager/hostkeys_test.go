package clustermanager

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

func TestForgetHostKey(t *testing.T) {
	inst := &stepInstaller{failStep: "etcd", block: make(chan struct{})}
	h := newInstallHarness(t, nil, inst)
	ctx := context.Background()
	if _, err := h.m.Create(ctx, createConfig(t, "c")); err != nil {
		t.Fatal(err)
	}
	// While the create runs, the pins belong to it.
	h.waitStatus("c", fsm.StateCreating, time.Second)
	if _, err := h.m.ForgetHostKey(ctx, "c", "n1"); !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Fatalf("ForgetHostKey during the create = %v, want a refusal", err)
	}
	close(inst.block)
	h.waitStatus("c", fsm.StateUnavailable, 10*time.Second)
	if rec, _ := h.storedStatus("c"); rec.secrets.ZKE == nil || rec.secrets.ZKE.HostKeys["10.0.0.1"] == "" {
		t.Fatal("the failed create kept no pinned host key")
	}

	tests := []struct {
		name, cluster, node string
		want                error
	}{
		{"unknown cluster", "nope", "n1", ErrNotFound},
		{"no node given", "c", "", validation.ErrInvalid},
		{"unknown node", "c", "n9", validation.ErrInvalid},
		{"node without a pin", "c", "n2", nil},
		{"pinned node", "c", "n1", nil},
		{"again", "c", "n1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := h.m.ForgetHostKey(ctx, tt.cluster, tt.node)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Fatalf("ForgetHostKey(%s, %q) = %v, want %v", tt.cluster, tt.node, err, tt.want)
			}
			if err == nil && c.Status != fsm.StateUnavailable {
				t.Errorf("the cluster moved to %s", c.Status)
			}
		})
	}
	rec, err := h.storedStatus("c")
	if err != nil || rec.secrets.ZKE == nil || rec.secrets.ZKE.HostKeys["10.0.0.1"] != "" || len(rec.secrets.ZKE.Checkpoints) != 2 {
		t.Fatalf("stored installer state after forgetting n1's key: %+v, %v", rec.secrets.ZKE, err)
	}
}

func TestForgetHostKeyOfImportedCluster(t *testing.T) {
	api := newAPIServer(t, "good")
	h := newHarness(t, nil)
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "imp", Kubeconfig: api.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.ForgetHostKey(context.Background(), "imp", "n1"); !errors.Is(err, validation.ErrInvalid) {
		t.Fatalf("ForgetHostKey of an imported cluster = %v, want a field error", err)
	}
}
