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
	generation := func() uint64 {
		t.Helper()
		g, stable := h.m.Generation()
		if !stable {
			t.Fatal("a transition is still counted as under way after it ended")
		}
		return g
	}
	moved := func(before uint64, what string) uint64 {
		t.Helper()
		now := generation()
		if now == before {
			t.Fatalf("%s: generation stayed %d", what, now)
		}
		return now
	}
	g := generation()
	if generation() != g {
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
	if generation() != g {
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

// While a transition is under way (saved, its state about to move) the
// generation is not stable, so no list taken then is kept; its end, or
// its failed save, makes it stable again, each at a new number.
func TestGenerationIsUnstableDuringATransition(t *testing.T) {
	m := &Manager{}
	g0, stable := m.Generation()
	if !stable {
		t.Fatal("a new manager is not stable")
	}
	m.beginTransition()
	m.beginTransition() // two clusters at once
	if g, stable := m.Generation(); stable || g == g0 {
		t.Fatalf("during two transitions: generation %d (was %d), stable %v", g, g0, stable)
	}
	m.endTransition()
	if _, stable := m.Generation(); stable {
		t.Fatal("stable with one transition still under way")
	}
	m.abortTransition()
	g1, stable := m.Generation()
	if !stable || g1 == g0 {
		t.Fatalf("after both: generation %d (was %d), stable %v", g1, g0, stable)
	}
	m.views.Add(1) // a record saved
	if g2, stable := m.Generation(); !stable || g2 != g1+1 {
		t.Fatalf("after a record change: generation %d, want %d, stable %v", g2, g1+1, stable)
	}
}
