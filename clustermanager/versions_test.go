package clustermanager

import (
	"context"
	"errors"
	"strings"
	"testing"

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
