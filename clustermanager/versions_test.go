package clustermanager

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

// A release the installer cannot install is refused up front, with the
// supported list, and nothing is saved or started.
func TestUnsupportedKubernetesVersionRefused(t *testing.T) {
	inst := &stepInstaller{}
	h := newInstallHarness(t, nil, inst)
	cfg := createConfig(t, "old")
	cfg.KubernetesVersion = "v1.20.0"
	_, err := h.m.Create(context.Background(), cfg)
	if !errors.Is(err, validation.ErrInvalid) || !strings.Contains(err.Error(), "kubernetesVersion: v1.20.0 cannot be installed") ||
		!strings.Contains(err.Error(), "supported: v1.36.3, v1.37.2") {
		t.Fatalf("Create with v1.20.0 = %v, want a kubernetesVersion field error listing v1.36.3 and v1.37.2", err)
	}
	if _, err := h.storedStatus("old"); err == nil {
		t.Fatal("a refused create left a row")
	}
	if _, err := h.m.Get("old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after a refused create = %v, want ErrNotFound", err)
	}
	if calls := inst.callList(); calls != "" {
		t.Fatalf("the installer ran: %s", calls)
	}

	// The default release is accepted.
	if _, err := h.m.Create(context.Background(), createConfig(t, "new")); err != nil {
		t.Fatalf("Create with the default version: %v", err)
	}
}

// A cluster created at a release this build no longer installs (one it
// keeps) can still be updated at it and upgraded, but no new cluster is
// created at it.
func TestKeptKubernetesVersion(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig(), creates: []string{"v1.35.4", "v1.36.3"}}
	h := newInstallHarness(t, nil, inst)
	ctx := context.Background()
	cfg := createConfig(t, "old")
	cfg.KubernetesVersion = "v1.35.4"
	if _, err := h.m.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("old", fsm.StateRunning, waitBound)

	// This build: v1.35.4 is kept, not installed.
	inst.mu.Lock()
	inst.creates = nil
	inst.mu.Unlock()
	again := createConfig(t, "again")
	again.KubernetesVersion = "v1.35.4"
	if _, err := h.m.Create(ctx, again); !errors.Is(err, validation.ErrInvalid) || !strings.Contains(err.Error(), "kubernetesVersion") {
		t.Fatalf("Create at a kept release = %v, want a kubernetesVersion field error", err)
	}
	labeled := cfg
	labeled.Nodes = append([]model.Node(nil), cfg.Nodes...)
	labeled.Nodes[0].Labels = map[string]string{"a": "b"}
	c, err := h.m.Update(ctx, "old", labeled)
	if err != nil || c.LastOperation.Type != OpUpdate {
		t.Fatalf("an update at the kept release = %+v, %v; want an update", c.LastOperation, err)
	}
	h.waitStatus("old", fsm.StateRunning, waitBound)
	labeled.KubernetesVersion = "v1.36.3"
	if c, err = h.m.Update(ctx, "old", labeled); err != nil || c.LastOperation.Type != OpUpgrade {
		t.Fatalf("an upgrade from the kept release = %+v, %v; want an upgrade", c.LastOperation, err)
	}
	h.waitStatus("old", fsm.StateRunning, waitBound)
}
