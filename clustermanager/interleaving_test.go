package clustermanager

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// holdAtStart holds the goroutine that logs "operation started" for
// cluster/op the first time: enqueueRun logs it after setRun and before
// queue.add of the run.
func holdAtStart(cluster, op string) (func(*Options), chan struct{}, func()) {
	reached := make(chan struct{})
	resume := make(chan struct{})
	var once sync.Once
	edit := func(o *Options) {
		o.Logger = slog.New(logHook(func(r slog.Record) {
			if r.Message == "operation started" && logAttr(r, "cluster") == cluster && logAttr(r, "operation") == op {
				once.Do(func() {
					close(reached)
					<-resume
				})
			}
		}))
	}
	return edit, reached, sync.OnceFunc(func() { close(resume) })
}

// A cancel that gets in between a start and the queueing of its run
// settles the cluster, and the run never begins.
func TestCancelBeforeTheRunIsQueued(t *testing.T) {
	inst := &stepInstaller{kubeconfig: newAPIServer(t, "good").kubeconfig()}
	hold, reached, release := holdAtStart("c", "create")
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) { o.Installer = inst; hold(o) })
	t.Cleanup(release)
	created := make(chan error, 1)
	go func() {
		_, err := h.m.Create(context.Background(), createConfig(t, "c"))
		created <- err
	}()
	waitDone(t, reached, "start held after setRun")
	if c, err := h.m.Cancel(context.Background(), "c"); err != nil || c.Status != fsm.StateCanceling {
		t.Fatalf("cancel = %s, %v", c.Status, err)
	}
	release()
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	h.settle("c")
	c, _ := h.m.Get("c")
	if c.Status != fsm.StateUnavailable || c.LastOperation == nil || c.LastOperation.State != OpCanceled {
		t.Errorf("after the cancel: %s, %+v; want Unavailable with the create canceled", c.Status, c.LastOperation)
	}
	if calls := inst.callList(); calls != "" {
		t.Errorf("the installer ran (%s) after the cancel", calls)
	}
}

// A delete that gets in between a create's start and the queueing of its
// run removes the cluster; the create never runs and never writes the row
// back.
func TestDeleteBeforeTheRunIsQueued(t *testing.T) {
	inst := &stepInstaller{kubeconfig: newAPIServer(t, "good").kubeconfig()}
	hold, reached, release := holdAtStart("c", "create")
	store := storagetest.Open(t)
	h := newHarnessWith(t, store, func(o *Options) { o.Installer = inst; hold(o) })
	t.Cleanup(release)
	created := make(chan error, 1)
	go func() {
		_, err := h.m.Create(context.Background(), createConfig(t, "c"))
		created <- err
	}()
	waitDone(t, reached, "start held after setRun")
	if c, err := h.m.Delete(context.Background(), "c", false); err != nil || c.Status != fsm.StateDeleting {
		t.Fatalf("delete = %s, %v", c.Status, err)
	}
	release()
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	h.waitGone("c")
	h.settle("c")
	if _, err := store.Get(storage.BucketClusters, "c"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the deleted cluster's row is stored again (%v)", err)
	}
	if calls := inst.callList(); calls != "remove" {
		t.Errorf("installer calls %q, want only the delete's remove", calls)
	}
}

// Following the log of an imported cluster that is connecting (it has no
// log) answers at once, without a channel that nothing would close.
func TestFollowLogOfAConnectingImport(t *testing.T) {
	h := newHarness(t, nil)
	addr := freeAddr(t)
	api := newAPIServer(t, "good")
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "c", Kubeconfig: kubeconfig("https://"+addr, api.caPEM(), "good")}); err != nil {
		t.Fatal(err)
	}
	frames, ch, stop, err := h.m.FollowLog("c", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if ch != nil || len(frames) != 0 {
		t.Errorf("follow of an unlogged connecting cluster: %d frames, live channel %v; want none", len(frames), ch != nil)
	}
}

// failingStore fails Update while fail is set.
type failingStore struct {
	storage.Store
	fail atomic.Bool
}

func (s *failingStore) Update(fn func(tx storage.Tx) error) error {
	if s.fail.Load() {
		return errors.New("disk full")
	}
	return s.Store.Update(fn)
}

// An outcome the store refuses is written again once the store works:
// the cluster never rests Canceling with nothing left to move it.
func TestRefusedOutcomeIsWrittenAgain(t *testing.T) {
	block := make(chan struct{})
	inst := &stepInstaller{kubeconfig: newAPIServer(t, "good").kubeconfig(), block: block, blocked: make(chan struct{})}
	bolt := storagetest.Open(t)
	fs := &failingStore{Store: bolt}
	h := newHarnessWith(t, bolt, func(o *Options) {
		o.Installer = inst
		o.Store = fs
		o.Logger = slog.New(logHook(func(r slog.Record) {
			if r.Message == "cluster state changed" && logAttr(r, "to") == "Canceling" {
				fs.fail.Store(true) // the cancel is saved; what follows fails
			}
		}))
	})
	retried := make(chan struct{})
	var once sync.Once
	h.m.concludeRetry = time.Millisecond
	if _, err := h.m.Create(context.Background(), createConfig(t, "c")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, inst.blocked, "install blocked")
	h.m.queue.mu.Lock()
	h.m.queue.added = func(_, name string, _ int) {
		if strings.HasPrefix(name, "retry ") {
			once.Do(func() { close(retried) })
		}
	}
	h.m.queue.mu.Unlock()
	if _, err := h.m.Cancel(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	// The settle's write failed and a retry was queued; the store heals.
	waitDone(t, retried, "the refused outcome queued again")
	fs.fail.Store(false)
	c := h.waitStatus("c", fsm.StateUnavailable, waitBound)
	if c.LastOperation == nil || c.LastOperation.State != OpCanceled {
		t.Errorf("after the store healed: %+v, want the create canceled", c.LastOperation)
	}
}

// waitPending returns a func that waits until key has n items waiting
// (the queue tells the test on every add; no polling).
func waitPending(t *testing.T, q *workQueue, key string, n int) func() {
	reached := make(chan struct{})
	var once sync.Once
	q.mu.Lock()
	q.added = func(k, _ string, waiting int) {
		if k == key && waiting >= n {
			once.Do(func() { close(reached) })
		}
	}
	q.mu.Unlock()
	return func() { waitDone(t, reached, "the queued items") }
}

// An update and a delete queued together on a Running cluster: the
// delete wins over the update's run, which never begins; the hosts are
// cleaned once.
func TestDeleteQueuedBehindAnUpdate(t *testing.T) {
	inst := &stepInstaller{kubeconfig: newAPIServer(t, "good").kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	if _, err := h.m.Create(context.Background(), createConfig(t, "c")); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("c", fsm.StateRunning, 10*time.Second)
	h.settle("c")
	gate := make(chan struct{})
	gated := make(chan struct{})
	if _, err := h.m.queue.add("c", "gate", false, func(context.Context) { close(gated); <-gate }); err != nil {
		t.Fatal(err)
	}
	waitDone(t, gated, "gate running")
	oneWaiting := waitPending(t, h.m.queue, "c", 1)
	upd := make(chan error, 1)
	go func() {
		cfg := createConfig(t, "c")
		cfg.SSHKey = ""
		_, err := h.m.Update(context.Background(), "c", cfg)
		upd <- err
	}()
	oneWaiting()
	twoWaiting := waitPending(t, h.m.queue, "c", 2)
	del := make(chan error, 1)
	go func() { _, err := h.m.Delete(context.Background(), "c", false); del <- err }()
	twoWaiting()
	close(gate)
	if err := <-upd; err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := <-del; err != nil {
		t.Fatalf("delete: %v", err)
	}
	h.waitGone("c")
	if calls := inst.callList(); calls != "create,remove" {
		t.Errorf("installer calls %q, want the create, then only the delete's remove", calls)
	}
}

// A shutdown between a start's transition and the queueing of its run:
// the create is acknowledged (its row is saved and resumes at the next
// start), never answered with an error while its row stays.
func TestShutdownInTheMiddleOfAStart(t *testing.T) {
	inst := &stepInstaller{kubeconfig: newAPIServer(t, "good").kubeconfig()}
	var h *harness
	var once sync.Once
	store := storagetest.Open(t)
	h = newHarnessWith(t, store, func(o *Options) {
		o.Installer = inst
		o.Logger = slog.New(logHook(func(r slog.Record) {
			if r.Message == "operation started" {
				once.Do(func() { h.m.cancel() })
			}
		}))
	})
	c, err := h.m.Create(context.Background(), createConfig(t, "c"))
	b, serr := store.Get(storage.BucketClusters, "c")
	switch {
	case err == nil && serr != nil:
		t.Errorf("create acknowledged but its row is not stored: %v", serr)
	case err != nil && serr == nil:
		rec, _ := decodeRecord(b, store.Sealer())
		t.Errorf("create answered %v but its row is stored as %s", err, rec.Status)
	case err != nil && !errors.Is(err, errShuttingDown):
		t.Errorf("create during shutdown: %v, want errShuttingDown", err)
	case err == nil && c.Status != fsm.StateCreating:
		t.Errorf("create answered %s", c.Status)
	}
}

// A row left Canceling by a crash: at the next start its operation is
// ended on disk and joins the history.
func TestCrashDuringACancelKeepsTheHistory(t *testing.T) {
	store := storagetest.Open(t)
	inst := &stepInstaller{kubeconfig: newAPIServer(t, "good").kubeconfig()}
	cfg := createConfig(t, "c")
	stored, sec := splitConfig(cfg)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := &record{Name: "c", Kind: KindCreated, Status: fsm.StateCanceling, Unavailable: true, Config: &stored, CreatedAt: t0, UpdatedAt: t0,
		LastOperation: &Operation{Type: OpCreate, State: OpRunning, StartedAt: t0, StartedBy: "admin"}, secrets: sec}
	b, err := encodeRecord(rec, store.Sealer())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(storage.BucketClusters, "c", b); err != nil {
		t.Fatal(err)
	}
	h := newInstallHarness(t, store, inst)
	h.settle("c")
	if c, _ := h.m.Get("c"); c.Status != fsm.StateUnavailable || c.LastOperation.State != OpCanceled {
		t.Errorf("after reload: %s with the create %s, want Unavailable with it canceled", c.Status, c.LastOperation.State)
	}
	if rec, err := h.storedStatus("c"); err != nil || rec.Status != fsm.StateUnavailable || rec.LastOperation.running() {
		t.Errorf("stored after reload: %+v (%v), want Unavailable with the operation ended", rec, err)
	}
	if _, err := h.m.Retry(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("c", fsm.StateRunning, 10*time.Second)
	h.settle("c")
	ops, _ := h.m.Operations("c")
	found := false
	for _, op := range ops {
		if op.StartedAt.Equal(t0) && op.State == OpCanceled && op.StartedBy == "admin" {
			found = true
		}
	}
	if len(ops) != 2 || !found {
		t.Errorf("history %+v, want the retry and the create the crash canceled", ops)
	}
}
