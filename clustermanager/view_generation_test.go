package clustermanager

import (
	"context"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// Generation moves after every change a list would show — a cluster
// added, its state moving, its record changing, its removal — and stays
// while nothing changes, so that a list rendered for one generation may be
// served until it moves.
func TestGenerationMovesWithTheViews(t *testing.T) {
	api := newAPIServer(t, "good")
	h := newHarness(t, nil)
	ctx := context.Background()
	moved := func(before uint64, what string) uint64 {
		t.Helper()
		now := h.m.Generation()
		if now == before {
			t.Fatalf("%s: generation stayed %d", what, now)
		}
		return now
	}
	g := h.m.Generation()
	if h.m.Generation() != g {
		t.Fatal("the generation moved with nothing changing")
	}
	if _, err := h.m.Import(ctx, model.ImportRequest{Name: "a", Kubeconfig: api.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	g = moved(g, "import")
	h.waitStatus("a", fsm.StateRunning, 10*time.Second)
	g = moved(g, "Running")
	listed := h.m.List(false)
	if len(listed) != 1 || listed[0].Status != fsm.StateRunning {
		t.Fatalf("list after the generation moved: %+v", listed)
	}
	if h.m.Generation() != g {
		t.Fatal("the generation moved while the cluster stayed Running")
	}
	if _, err := h.m.Delete(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	h.waitGone("a")
	moved(g, "delete")
	if listed := h.m.List(false); len(listed) != 0 {
		t.Fatalf("list after the delete: %+v", listed)
	}
}
