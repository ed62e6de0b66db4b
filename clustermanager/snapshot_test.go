package clustermanager

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/snapshots/snapshottest"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
)

// snapshotHarness is a manager with a snapshot store under dir and an
// installer that streams src (a real etcd snapshot) as the cluster's.
func snapshotHarness(t *testing.T, src snapshottest.Source, clock func() time.Time) (*harness, *stepInstaller, string) {
	t.Helper()
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig(), withPKI: true, snapshot: src.Data}
	store := storagetest.Open(t)
	dir := filepath.Join(t.TempDir(), "snapshots")
	snaps, err := snapshots.Open(dir, store.Sealer(), clock)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, store, func(o *Options) {
		o.Installer = inst
		o.Snapshots = snaps
		if clock != nil {
			o.Clock = clock
		}
	})
	return h, inst, dir
}

// created creates cluster name with the harness's installer and waits for
// Running.
func (h *harness) created(name string) {
	h.t.Helper()
	if _, err := h.m.Create(context.Background(), createConfig(h.t, name)); err != nil {
		h.t.Fatal(err)
	}
	h.waitStatus(name, fsm.StateRunning, waitBound)
}

func TestSnapshotTakenDrilledListedAndDeleted(t *testing.T) {
	src := snapshottest.Take(t, 50)
	h, inst, dir := snapshotHarness(t, src, nil)
	h.created("snap")
	ctx := WithActor(context.Background(), "alice")

	meta, err := h.m.TakeSnapshot(ctx, "snap")
	if err != nil {
		t.Fatal(err)
	}
	if meta.Trigger != TriggerManual || meta.Pinned || meta.Member != "n1" || meta.TakenBy != "alice" ||
		meta.KeyCount != src.Keys || meta.Revision != src.Revision || meta.Size != int64(len(src.Data)) {
		t.Fatalf("snapshot %+v; want manual, by alice, from n1, %d keys at revision %d", meta, src.Keys, src.Revision)
	}
	ev := h.waitEvent(pubsub.ClusterSnapshotTaken, "snap", "Running")
	if !strings.Contains(ev.Reason, meta.ID) {
		t.Errorf("event %+v does not name the snapshot", ev)
	}
	// The drill loop restores it on this server and marks it verified.
	ev = h.waitEvent(pubsub.ClusterSnapshotVerified, "snap", "")
	got, err := h.m.Snapshot("snap", meta.ID)
	if err != nil || got.Verification != snapshots.Verified {
		t.Fatalf("after the drill (%s): %+v %v", ev.Reason, got, err)
	}
	rc, _, err := h.m.OpenSnapshot("snap", meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(rc)
	rc.Close()
	if err != nil || !bytes.Equal(buf.Bytes(), src.Data) {
		t.Fatalf("the stored snapshot does not read back as taken: %v", err)
	}
	ops, err := h.m.Operations("snap")
	if err != nil || len(ops) == 0 || ops[0].Type != OpSnapshot || ops[0].State != OpSucceeded || ops[0].StartedBy != "alice" {
		t.Fatalf("history %+v %v; want the snapshot first", ops, err)
	}
	if c, _ := h.m.Get("snap"); c.Status != fsm.StateRunning {
		t.Errorf("a snapshot moved the cluster to %s", c.Status)
	}

	if err := h.m.DeleteSnapshot("snap", meta.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Snapshot("snap", meta.ID); !errors.Is(err, snapshots.ErrNotFound) {
		t.Errorf("a deleted snapshot reads back: %v", err)
	}
	if _, err := h.m.TakeSnapshot(ctx, "snap"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Delete(ctx, "snap", false); err != nil {
		t.Fatal(err)
	}
	h.waitEvent(pubsub.ClusterDeleted, "snap", "")
	AwaitBus(t, h.bus, waitBound, "the deleted cluster's snapshots removed", func() bool {
		files, err := os.ReadDir(filepath.Join(dir, "snap"))
		return err != nil || len(files) == 0
	})
	if calls := inst.callList(); !strings.Contains(calls, "snapshot") {
		t.Errorf("installer calls %s", calls)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	src := snapshottest.Take(t, 5)
	h, inst, _ := snapshotHarness(t, src, nil)
	ctx := context.Background()
	kc := newAPIServer(t, "good").kubeconfig()
	if _, err := h.m.Import(ctx, model.ImportRequest{Name: "imported", Kubeconfig: kc}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("imported", fsm.StateRunning, waitBound)
	if _, err := h.m.TakeSnapshot(ctx, "imported"); !errors.Is(err, ErrNotSnapshottable) {
		t.Errorf("snapshot of an imported cluster: %v", err)
	}
	if _, err := h.m.TakeSnapshot(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("snapshot of an unknown cluster: %v", err)
	}

	// A cluster busy with an update refuses at once.
	h.created("busy")
	block := make(chan struct{})
	inst.mu.Lock()
	inst.block, inst.blocked = block, make(chan struct{})
	blocked := inst.blocked
	inst.mu.Unlock()
	cfg := createConfig(t, "busy")
	cfg.Nodes[1].Labels = map[string]string{"a": "b"}
	if _, err := h.m.Update(ctx, "busy", cfg); err != nil {
		t.Fatal(err)
	}
	<-blocked
	if _, err := h.m.TakeSnapshot(ctx, "busy"); !errors.Is(err, ErrBusy) {
		t.Errorf("snapshot of a busy cluster: %v", err)
	}
	close(block)
	h.waitStatus("busy", fsm.StateRunning, waitBound)

	// A failed snapshot is in the history and announced.
	inst.mu.Lock()
	inst.snapshotErr = errors.New("etcd on n1: connection refused")
	inst.mu.Unlock()
	if _, err := h.m.TakeSnapshot(ctx, "busy"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("failed snapshot: %v", err)
	}
	h.waitEvent(pubsub.ClusterSnapshotFailed, "busy", "")
	ops, _ := h.m.Operations("busy")
	if len(ops) == 0 || ops[0].Type != OpSnapshot || ops[0].State != OpFailed || ops[0].Error == nil {
		t.Errorf("history %+v; want the failed snapshot first", ops)
	}
}

func TestUpdateTakesAPinnedSnapshotFirst(t *testing.T) {
	src := snapshottest.Take(t, 5)
	h, inst, _ := snapshotHarness(t, src, nil)
	h.created("pin")
	cfg := createConfig(t, "pin")
	cfg.Nodes[1].Labels = map[string]string{"a": "b"}
	if _, err := h.m.Update(context.Background(), "pin", cfg); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("pin", fsm.StateRunning, waitBound)
	if calls := inst.callList(); !strings.HasSuffix(calls, "snapshot,update") {
		t.Errorf("installer calls %s; want the snapshot right before the update", calls)
	}
	list, err := h.m.Snapshots("pin")
	if err != nil || len(list) != 1 || list[0].Trigger != "before update" || !list[0].Pinned {
		t.Fatalf("snapshots %+v %v; want one pinned, before update", list, err)
	}
	fs := frames(t, h.m, "pin")
	if !slices.ContainsFunc(fs, func(f Frame) bool { return f.Step == "snapshot" && strings.Contains(f.Message, list[0].ID) }) {
		t.Errorf("the update's log does not name its snapshot: %+v", fs)
	}

	// When that snapshot fails, the update stops before it changed
	// anything, and says why.
	inst.mu.Lock()
	inst.snapshotErr = errors.New("no healthy etcd member")
	inst.mu.Unlock()
	cfg.Nodes[1].Labels = map[string]string{"a": "c"}
	if _, err := h.m.Update(context.Background(), "pin", cfg); err != nil {
		t.Fatal(err)
	}
	c := h.waitStatus("pin", fsm.StateUnavailable, waitBound)
	if !strings.Contains(c.Reason, "automatic etcd snapshot before the update failed") {
		t.Errorf("reason %q", c.Reason)
	}
	if n := strings.Count(inst.callList(), "update"); n != 1 {
		t.Errorf("the installer's update ran %d times; the failed snapshot should stop the second", n)
	}
}

func TestRestore(t *testing.T) {
	src := snapshottest.Take(t, 20)
	h, inst, _ := snapshotHarness(t, src, nil)
	h.created("rs")
	ctx := context.Background()
	meta, err := h.m.TakeSnapshot(ctx, "rs")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		opts  RestoreOptions
		field string
	}{
		{"no snapshot", RestoreOptions{}, "snapshot"},
		{"unknown snapshot", RestoreOptions{Snapshot: "20200101-000000-0000"}, "snapshot"},
		{"not an id", RestoreOptions{Snapshot: "../../etc"}, "snapshot"},
	} {
		_, err := h.m.Restore(ctx, "rs", tt.opts)
		var verrs validation.Errors
		if !errors.As(err, &verrs) || verrs[0].Field != tt.field {
			t.Errorf("%s: %v, want a validation error on %s", tt.name, err, tt.field)
		}
	}

	c, err := h.m.Restore(ctx, "rs", RestoreOptions{Snapshot: meta.ID})
	if err != nil || c.Status != fsm.StateUpdating {
		t.Fatalf("restore: %+v %v", c, err)
	}
	c = h.waitStatus("rs", fsm.StateRunning, waitBound)
	if c.LastOperation.Type != OpRestore || c.LastOperation.State != OpSucceeded {
		t.Fatalf("after the restore: %+v", c.LastOperation)
	}
	inst.mu.Lock()
	restored := inst.restored
	inst.mu.Unlock()
	if len(restored) != 1 || restored[0].id != meta.ID || !bytes.Equal(restored[0].data, src.Data) {
		t.Fatalf("the installer restored %d snapshots; want %s with the bytes taken", len(restored), meta.ID)
	}
	if rec, _ := h.storedStatus("rs"); rec.RestoreSnapshot != "" {
		t.Errorf("a finished restore left restoreSnapshot %q", rec.RestoreSnapshot)
	}
	list, _ := h.m.Snapshots("rs")
	if !slices.ContainsFunc(list, func(m snapshots.Meta) bool { return m.Trigger == "before restore" && m.Pinned }) {
		t.Errorf("no pinned snapshot before the restore: %+v", list)
	}

	// A snapshot whose drill failed is refused unless forced. Its own
	// drill ends first, so that it cannot overwrite the failure set here
	// (seen on a busy machine).
	awaitBus(t, h.bus, waitBound, "the drill of snapshot "+meta.ID, func() bool {
		list, _ := h.m.Snapshots("rs")
		return slices.ContainsFunc(list, func(m snapshots.Meta) bool {
			return m.ID == meta.ID && (m.Verification == snapshots.Verified || m.Verification == snapshots.Failed)
		})
	})
	if _, err := h.m.opts.Snapshots.SetVerification("rs", meta.ID, snapshots.DrillResult{}, errors.New("key count 3, want 20")); err != nil {
		t.Fatal(err)
	}
	_, err = h.m.Restore(ctx, "rs", RestoreOptions{Snapshot: meta.ID})
	var verrs validation.Errors
	if !errors.As(err, &verrs) || !strings.Contains(err.Error(), "failed its restore drill") {
		t.Fatalf("restore of a snapshot that failed its drill: %v", err)
	}
	if _, err := h.m.Restore(ctx, "rs", RestoreOptions{Snapshot: meta.ID, Force: true}); err != nil {
		t.Fatalf("forced restore: %v", err)
	}
	h.waitStatus("rs", fsm.StateRunning, waitBound)
}

func TestRestoreGoesOnWithoutItsOwnSnapshotAndResumes(t *testing.T) {
	src := snapshottest.Take(t, 5)
	h, inst, _ := snapshotHarness(t, src, nil)
	h.created("broken")
	ctx := context.Background()
	meta, err := h.m.TakeSnapshot(ctx, "broken")
	if err != nil {
		t.Fatal(err)
	}
	// etcd is what is broken: the snapshot before the restore fails,
	// the restore goes on; its installer run fails at etcd.
	inst.mu.Lock()
	inst.snapshotErr = errors.New("no healthy etcd member")
	inst.failStep = "etcd"
	inst.mu.Unlock()
	if _, err := h.m.Restore(ctx, "broken", RestoreOptions{Snapshot: meta.ID}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("broken", fsm.StateUnavailable, waitBound)
	fs := frames(t, h.m, "broken")
	if !slices.ContainsFunc(fs, func(f Frame) bool { return f.Level == "warn" && strings.Contains(f.Message, "the restore goes on") }) {
		t.Errorf("no warning about the missing snapshot: %+v", fs)
	}
	// An update is refused until the restore is finished; retry resumes
	// the restore, not an update.
	if _, err := h.m.Update(ctx, "broken", createConfig(t, "broken")); err == nil || !strings.Contains(err.Error(), "restore of cluster broken did not finish") {
		t.Errorf("update during an unfinished restore: %v", err)
	}
	if err := h.m.DeleteSnapshot("broken", meta.ID); !errors.Is(err, snapshots.ErrHeld) {
		t.Errorf("delete of the snapshot being restored: %v", err)
	}
	if _, err := h.m.RotateCertificates(ctx, "broken", RotateOptions{}); err == nil || !strings.Contains(err.Error(), "restore of cluster broken did not finish") {
		t.Errorf("rotation during an unfinished restore: %v", err)
	}
	inst.mu.Lock()
	inst.failStep = ""
	inst.mu.Unlock()
	c, err := h.m.Retry(ctx, "broken")
	if err != nil {
		t.Fatal(err)
	}
	if c.LastOperation.Type != OpRestore {
		t.Fatalf("retry started %s, want the restore", c.LastOperation.Type)
	}
	h.waitStatus("broken", fsm.StateRunning, waitBound)
	inst.mu.Lock()
	n := len(inst.restored)
	inst.mu.Unlock()
	if n != 2 {
		t.Errorf("restore ran %d times, want 2 (failed, resumed)", n)
	}
}

func TestSnapshotSchedule(t *testing.T) {
	src := snapshottest.Take(t, 5)
	clock := newFakeClock()
	h, _, _ := snapshotHarness(t, src, clock.Now)
	h.created("sched")
	due := func() []string {
		var names []string
		for _, e := range h.m.snapshotsDue() {
			names = append(names, e.name)
		}
		return names
	}
	if got := due(); !slices.Equal(got, []string{"sched"}) {
		t.Fatalf("due with no snapshot: %v", got)
	}
	e, _ := h.m.lookup("sched")
	h.m.scheduledSnapshot(context.Background(), e)
	if got := due(); len(got) != 0 {
		t.Fatalf("due right after a snapshot: %v", got)
	}
	clock.Advance(11 * time.Hour)
	if got := due(); len(got) != 0 {
		t.Fatalf("due 11h after a snapshot (interval 12h): %v", got)
	}
	clock.Advance(time.Hour)
	if got := due(); !slices.Equal(got, []string{"sched"}) {
		t.Fatalf("not due 12h after a snapshot: %v", got)
	}
	list, _ := h.m.Snapshots("sched")
	if len(list) != 1 || list[0].Trigger != TriggerScheduled || list[0].TakenBy != scheduleActor {
		t.Fatalf("scheduled snapshot %+v", list)
	}
	// Keep: the schedule keeps the newest five of its own and manual
	// ones (a snapshot in its drill is never removed: each drill is
	// awaited before the next snapshot).
	h.waitEvent(pubsub.ClusterSnapshotVerified, "sched", "")
	for range 6 {
		clock.Advance(12 * time.Hour)
		h.m.scheduledSnapshot(context.Background(), e)
		h.waitEvent(pubsub.ClusterSnapshotVerified, "sched", "")
	}
	if list, _ := h.m.Snapshots("sched"); len(list) != 5 {
		t.Errorf("%d snapshots kept, want 5", len(list))
	}
}

func TestOneSnapshotAtATimeAndDeleteInterruptsIt(t *testing.T) {
	src := snapshottest.Take(t, 5)
	h, inst, dir := snapshotHarness(t, src, nil)
	h.created("fl")
	block := make(chan struct{})
	inst.mu.Lock()
	inst.snapshotBlock = block
	inst.mu.Unlock()
	ctx := context.Background()
	errc := make(chan error, 1)
	go func() {
		_, err := h.m.TakeSnapshot(ctx, "fl")
		errc <- err
	}()
	<-block // in flight
	if _, err := h.m.TakeSnapshot(ctx, "fl"); !errors.Is(err, ErrBusy) {
		t.Errorf("a second snapshot while one is in flight: %v", err)
	}
	e, _ := h.m.lookup("fl")
	if due := h.m.snapshotsDue(); slices.Contains(due, e) {
		t.Error("the schedule would start a second snapshot beside the one in flight")
	}
	// The cluster's worker is not held by the snapshot.
	h.settle("fl")
	// A delete interrupts the snapshot; nothing of it stays on disk.
	if _, err := h.m.Delete(ctx, "fl", false); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Error("the interrupted snapshot succeeded")
	}
	h.waitEvent(pubsub.ClusterDeleted, "fl", "")
	AwaitBus(t, h.bus, waitBound, "no snapshot left of the deleted cluster", func() bool {
		files, err := os.ReadDir(filepath.Join(dir, "fl"))
		return err != nil || len(files) == 0
	})
}

func TestOrphanSnapshotsRemovedAtStart(t *testing.T) {
	src := snapshottest.Take(t, 5)
	store := storagetest.Open(t)
	dir := filepath.Join(t.TempDir(), "snapshots")
	snaps, err := snapshots.Open(dir, store.Sealer(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.Save(context.Background(), snapshots.Meta{Cluster: "gone", Trigger: TriggerManual}, bytes.NewReader(src.Data)); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, store, func(o *Options) { o.Snapshots = snaps })
	AwaitBus(t, h.bus, waitBound, "the snapshots of a cluster that does not exist removed", func() bool {
		cs, err := snaps.Clusters()
		return err == nil && !slices.Contains(cs, "gone")
	})
}
