package snapshots

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// stopped reports whether e's server has stopped.
func stopped(e *embed.Etcd) bool {
	select {
	case <-e.Server.StopNotify():
		return true
	default:
		return false
	}
}

// scratchEmpty fails t if the store's scratch directory holds anything
// but its mark.
func scratchEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, ".scratch"))
	if err != nil || len(entries) != 1 || entries[0].Name() != markFile {
		t.Errorf("scratch directory after the drill: %v, %v; want it empty", entries, err)
	}
}

func TestDrillVerifies(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	m := mustSave(t, s, "a", false, src.Data)
	d := NewDriller(s, 0)
	var server *embed.Etcd
	d.started = func(e *embed.Etcd) { server = e }
	got, err := d.Drill(context.Background(), "a", m.ID)
	if err != nil {
		t.Fatalf("drill: %v", err)
	}
	if got.Verification != Verified || got.VerifiedAt == nil || got.DrillSeconds <= 0 || got.VerifyError != "" {
		t.Errorf("after the drill the record is %+v, want verified with its time and duration", got)
	}
	if g, _ := s.Get("a", m.ID); g.Verification != Verified {
		t.Errorf("stored record says %q, want verified", g.Verification)
	}
	if server == nil || !stopped(server) {
		t.Error("the drill's etcd was not started, or is still running")
	}
	scratchEmpty(t, dir)
}

func TestDrillDetectsMismatch(t *testing.T) {
	src := snapshot100(t)
	tests := []struct {
		name  string
		alter func(*Meta)
		want  []string // in the error
	}{
		{"key count", func(m *Meta) { m.KeyCount = 101 }, []string{"100 keys", "says 101"}},
		{"revision", func(m *Meta) { m.Revision = 5 }, []string{fmt.Sprintf("revision %d", src.Revision), "says 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newTestStore(t, testClock())
			m := mustSave(t, s, "a", false, src.Data)
			editMeta(t, filepath.Join(dir, "a", m.ID+".json"), tt.alter)
			got, err := NewDriller(s, 0).Drill(context.Background(), "a", m.ID)
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("drill = %v, want ErrMismatch", err)
			}
			if got.Verification != Failed || got.VerifiedAt != nil {
				t.Errorf("record after the drill: %+v, want failed", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.VerifyError, w) {
					t.Errorf("verify error %q does not say %q", got.VerifyError, w)
				}
			}
			scratchEmpty(t, dir)
		})
	}
}

func TestDrillOfCorruptSnapshotFails(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	m := mustSave(t, s, "a", false, src.Data)
	rewrite(t, filepath.Join(dir, "a", m.ID+".snap"), func(d []byte) []byte { d[len(d)-20] ^= 1; return d })
	got, err := NewDriller(s, 0).Drill(context.Background(), "a", m.ID)
	if !errors.Is(err, ErrCorrupt) || got.Verification != Failed || got.VerifyError == "" {
		t.Fatalf("drill = %+v, %v; want failed with ErrCorrupt", got, err)
	}
	scratchEmpty(t, dir)
}

func TestDrillCancelled(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	m := mustSave(t, s, "a", false, src.Data)
	// An earlier drill's result must survive a drill that is interrupted.
	if _, err := s.SetVerification("a", m.ID, DrillResult{Duration: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	d := NewDriller(s, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var server *embed.Etcd
	d.started = func(e *embed.Etcd) {
		server = e
		cancel()
	}
	start := time.Now()
	got, err := d.Drill(ctx, "a", m.ID)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("drill = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("a cancelled drill took %v", took)
	}
	if server == nil || !stopped(server) {
		t.Error("the drill's etcd was not started, or is still running")
	}
	if got.Verification != Verified {
		t.Errorf("after the cancelled drill the record says %q, want the earlier %q", got.Verification, Verified)
	}
	scratchEmpty(t, dir)

	// Cancelled before it starts: returns at once, nothing changes.
	if _, err := d.Drill(ctx, "a", m.ID); !errors.Is(err, context.Canceled) {
		t.Errorf("drill with a cancelled context = %v, want context.Canceled", err)
	}
	if g, _ := s.Get("a", m.ID); g.Verification != Verified {
		t.Errorf("record says %q, want %q", g.Verification, Verified)
	}
}

func TestDrillTimeoutLeavesItUnverified(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	m := mustSave(t, s, "a", false, src.Data)
	got, err := NewDriller(s, time.Nanosecond).Drill(context.Background(), "a", m.ID)
	if !errors.Is(err, ErrDrillTimeout) || got.Verification != Unverified || !strings.Contains(err.Error(), "stays unverified") {
		t.Fatalf("drill = %+v, %v; want unverified after the timeout", got, err)
	}
	if g, _ := s.Get("a", m.ID); g.Verification != Unverified {
		t.Errorf("record says %q after a timed-out drill", g.Verification)
	}
	scratchEmpty(t, dir)
}

func TestHoldKeepsASnapshotFromDeleteAndPrune(t *testing.T) {
	src := snapshot100(t)
	s, _ := newTestStore(t, testClock())
	held := mustSave(t, s, "a", false, src.Data)
	for range 3 {
		mustSave(t, s, "a", false, src.Data)
	}
	if err := s.Hold("a", held.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("a", held.ID); !errors.Is(err, ErrHeld) {
		t.Errorf("delete of a held snapshot: %v", err)
	}
	removed, err := s.Prune("a", 1)
	if err != nil || len(removed) != 2 || slices.ContainsFunc(removed, func(m Meta) bool { return m.ID == held.ID }) {
		t.Errorf("prune removed %v (%v); want the two unheld old ones", ids(removed), err)
	}
	s.Release("a", held.ID)
	if err := s.Delete("a", held.ID); err != nil {
		t.Errorf("delete after release: %v", err)
	}
	if err := s.Hold("a", "20200101-000000-0000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("hold of a missing snapshot: %v", err)
	}
	if cs, err := s.Clusters(); err != nil || !slices.Equal(cs, []string{"a"}) {
		t.Errorf("Clusters = %v, %v", cs, err)
	}
}

func TestPruneCapsPinned(t *testing.T) {
	src := snapshot100(t)
	s, _ := newTestStore(t, testClock())
	for range MaxPinned + 2 {
		mustSave(t, s, "a", true, src.Data)
	}
	removed, err := s.Prune("a", 5)
	if err != nil || len(removed) != 2 {
		t.Fatalf("prune removed %d pinned snapshots (%v), want the 2 beyond %d", len(removed), err, MaxPinned)
	}
	if list, _ := s.List("a"); len(list) != MaxPinned {
		t.Errorf("%d kept", len(list))
	}
}

func TestDrillBusy(t *testing.T) {
	src := snapshot100(t)
	s, _ := newTestStore(t, testClock())
	m := mustSave(t, s, "a", false, src.Data)
	if _, err := s.MarkVerifying("a", m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDriller(s, 0).Drill(context.Background(), "a", m.ID); !errors.Is(err, ErrBusy) {
		t.Errorf("drill of a snapshot being drilled = %v, want ErrBusy", err)
	}
	if _, err := NewDriller(s, 0).Drill(context.Background(), "a", "20200101-000000-0000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("drill of a missing snapshot = %v, want ErrNotFound", err)
	}
}
