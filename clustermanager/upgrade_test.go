package clustermanager

import (
	"context"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

func TestUpgradeFailsThenRevertsOrRetries(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	ctx := context.Background()
	cfg := createConfig(t, "up")
	cfg.KubernetesVersion = "v1.36.3"
	if _, err := h.m.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("up", fsm.StateRunning, waitBound)

	// The upgrade fails half way: Unavailable, the desired version kept,
	// other changes refused until it is retried or reverted.
	inst.mu.Lock()
	inst.failStep = "etcd"
	inst.mu.Unlock()
	cfg.KubernetesVersion = "v1.37.2"
	c, err := h.m.Update(ctx, "up", cfg)
	if err != nil || c.LastOperation.Type != OpUpgrade {
		t.Fatalf("a version change started %+v, %v; want an upgrade", c.LastOperation, err)
	}
	h.waitStatus("up", fsm.StateUnavailable, waitBound)
	changed := cfg
	changed.Nodes = append([]model.Node(nil), cfg.Nodes...)
	changed.Nodes[1].Labels = map[string]string{"a": "b"}
	if _, err := h.m.Update(ctx, "up", changed); err == nil || !strings.Contains(err.Error(), "?action=revert") {
		t.Errorf("an update during an unfinished upgrade: %v", err)
	}

	// Revert: an upgrade back to the version the cluster ran.
	inst.mu.Lock()
	inst.failStep = ""
	inst.mu.Unlock()
	if c, err = h.m.Revert(ctx, "up"); err != nil || c.LastOperation.Type != OpUpgrade {
		t.Fatalf("revert: %+v %v", c, err)
	}
	h.waitStatus("up", fsm.StateRunning, waitBound)
	inst.mu.Lock()
	last := inst.prevs[len(inst.prevs)-1]
	inst.mu.Unlock()
	if last.Applied == nil || last.Applied.KubernetesVersion != "v1.36.3" {
		t.Errorf("the revert ran from %+v", last.Applied)
	}
	if rec, _ := h.storedStatus("up"); rec.Config.KubernetesVersion != "v1.36.3" || rec.secrets.ZKE.Applied.KubernetesVersion != "v1.36.3" {
		t.Errorf("after the revert the cluster wants %s and runs %s", rec.Config.KubernetesVersion, rec.secrets.ZKE.Applied.KubernetesVersion)
	}
	if _, err := h.m.Revert(ctx, "up"); err == nil {
		t.Error("a second revert with nothing to revert was accepted")
	} else if _, ok := err.(validation.Errors); !ok {
		t.Errorf("revert with nothing to revert: %T %v", err, err)
	}

	// Failed again, then retried: the upgrade carries on.
	inst.mu.Lock()
	inst.failStep = "etcd"
	inst.mu.Unlock()
	if _, err := h.m.Update(ctx, "up", cfg); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("up", fsm.StateUnavailable, waitBound)
	inst.mu.Lock()
	inst.failStep = ""
	inst.mu.Unlock()
	if c, err = h.m.Retry(ctx, "up"); err != nil || c.LastOperation.Type != OpUpgrade {
		t.Fatalf("retry: %+v %v", c, err)
	}
	h.waitStatus("up", fsm.StateRunning, waitBound)
	if rec, _ := h.storedStatus("up"); rec.secrets.ZKE.Applied.KubernetesVersion != "v1.37.2" {
		t.Errorf("after the retried upgrade the cluster runs %s", rec.secrets.ZKE.Applied.KubernetesVersion)
	}
	if calls := inst.callList(); strings.Count(calls, "upgrade") != 4 {
		t.Errorf("installer calls %s; want 4 upgrades (failed, revert, failed, retry)", calls)
	}
}
