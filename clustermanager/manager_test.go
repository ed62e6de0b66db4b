package clustermanager

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
)

// sealedStore is a store with the sealer of its key file: a bbolt file
// (most tests) or an etcd prefix.
type sealedStore interface {
	storage.Store
	Sealer() storage.Sealer
}

// harness is a Manager on a real bbolt file (or etcd prefix), running
// until the test ends.
type harness struct {
	t     *testing.T
	store sealedStore
	bus   *pubsub.Bus
	m     *Manager
	sub   *pubsub.Subscription
	stop  func()
}

// fastOptions retries connections quickly and leaves health probes to the
// tests: the health loop's ticker (HealthInterval/3) never fires within a
// test, which drives m.sweep or m.probe itself when it wants a probe.
func fastOptions(store sealedStore, bus *pubsub.Bus) Options {
	return Options{
		Store:          store,
		Sealer:         store.Sealer(),
		Bus:            bus,
		HealthInterval: time.Hour,
		ProbeTimeout:   2 * time.Second,
		BackoffInitial: 20 * time.Millisecond,
		BackoffMax:     100 * time.Millisecond,
	}
}

func newHarness(t *testing.T, store *storage.Bolt) *harness {
	t.Helper()
	if store == nil {
		store = storagetest.Open(t)
	}
	return newHarnessWith(t, store, nil)
}

func newHarnessWith(t *testing.T, store sealedStore, edit func(*Options)) *harness {
	t.Helper()
	bus := pubsub.New(pubsub.Options{})
	opts := fastOptions(store, bus)
	if edit != nil {
		edit(&opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: store, bus: bus, m: m, sub: bus.Subscribe()}
	if _, err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Error("Run did not return within 10s of cancel")
			}
			h.sub.Close()
			bus.Close()
		})
	}
	t.Cleanup(h.stop)
	return h
}

// storedStatus reads the cluster's row back from the store.
func (h *harness) storedStatus(name string) (*record, error) {
	b, err := h.store.Get(storage.BucketClusters, name)
	if err != nil {
		return nil, err
	}
	return decodeRecord(b, h.store.Sealer())
}

// waitEvent returns the next event of kind about cluster (with status,
// unless status is "") that the harness's subscription, open since the
// manager was created, has received or receives within waitBound.
func (h *harness) waitEvent(kind pubsub.Kind, cluster, status string) pubsub.Event {
	h.t.Helper()
	timeout := time.NewTimer(waitBound)
	defer timeout.Stop()
	for {
		select {
		case ev := <-h.sub.C():
			if ev.Kind == kind && ev.Cluster == cluster && (status == "" || ev.Status == status) {
				return ev
			}
		case <-timeout.C:
			h.t.Fatalf("no %s event for %s (status %q) within %s", kind, cluster, status, waitBound)
		}
	}
}

func TestImportReachesRunning(t *testing.T) {
	api := newAPIServer(t, "good")
	h := newHarness(t, nil)
	c, err := h.m.Import(context.Background(), model.ImportRequest{Name: " c1 ", Kubeconfig: api.kubeconfig()})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "c1" || c.Status != fsm.StateConnecting {
		t.Fatalf("import answered %s/%s, want c1/Connecting", c.Name, c.Status)
	}
	c = h.waitStatus("c1", fsm.StateRunning, 10*time.Second)
	if c.Version != "v1.36.3" || c.NodeCount != 2 {
		t.Errorf("version %q nodes %d, want v1.36.3 and 2", c.Version, c.NodeCount)
	}
	if c.LastOperation == nil || c.LastOperation.State != OpSucceeded {
		t.Errorf("last operation %+v, want succeeded", c.LastOperation)
	}
	h.waitEvent(pubsub.ClusterCreated, "c1", "Running")
	rec, err := h.storedStatus("c1")
	if err != nil || rec.Status != fsm.StateRunning || rec.Unavailable || string(rec.secrets.Kubeconfig) != api.kubeconfig() {
		t.Fatalf("stored record %+v, err %v; want Running with the kubeconfig", rec, err)
	}
	raw, _ := h.store.Get(storage.BucketClusters, "c1")
	if strings.Contains(string(raw), "good") || strings.Contains(string(raw), "certificate-authority") {
		t.Error("kubeconfig stored in clear text")
	}
	kc, err := h.m.Kubeconfig("c1")
	if err != nil || string(kc) != api.kubeconfig() {
		t.Errorf("Kubeconfig: %v", err)
	}
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "c1", Kubeconfig: api.kubeconfig()}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("second import: %v, want ErrDuplicate", err)
	}
}

func TestImportPermanentFailures(t *testing.T) {
	api := newAPIServer(t, "good")
	h := newHarness(t, nil)
	cases := []struct {
		name, kubeconfig, reason string
	}{
		{"bad-token", kubeconfig(api.srv.URL, api.caPEM(), "wrong"), "401 Unauthorized"},
		{"wrong-ca", kubeconfig(api.srv.URL, otherCA(t), "good"), "unknown authority"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: tc.name, Kubeconfig: tc.kubeconfig}); err != nil {
				t.Fatal(err)
			}
			c := h.waitStatus(tc.name, fsm.StateUnavailable, 10*time.Second)
			if !strings.Contains(c.Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", c.Reason, tc.reason)
			}
			if c.LastOperation == nil || c.LastOperation.State != OpFailed || c.LastOperation.Error == nil || !c.LastOperation.Error.UserFixable {
				t.Errorf("last operation %+v, want failed, user-fixable", c.LastOperation)
			}
			rec, err := h.storedStatus(tc.name)
			if err != nil || rec.Status != fsm.StateUnavailable || !rec.Unavailable {
				t.Errorf("stored %+v (%v), want Unavailable", rec, err)
			}
			if _, err := h.m.Kubeconfig(tc.name); !errors.Is(err, ErrNotReady) {
				t.Errorf("Kubeconfig of unavailable cluster: %v, want ErrNotReady", err)
			}
		})
	}
}

func TestImportRejectsBadInput(t *testing.T) {
	h := newHarness(t, nil)
	_, err := h.m.Import(context.Background(), model.ImportRequest{Name: "Bad_Name", Kubeconfig: ""})
	var verrs validation.Errors
	if !errors.As(err, &verrs) || len(verrs) != 2 {
		t.Fatalf("import of bad input: %v, want 2 field errors", err)
	}
	if got := h.m.List(false); len(got) != 0 {
		t.Fatalf("bad import left %d clusters", len(got))
	}
	if rows, _ := h.store.List(storage.BucketClusters); len(rows) != 0 {
		t.Fatalf("bad import left %d rows", len(rows))
	}
}

// freeAddr returns a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestConnectRetriesUntilServerComesUp(t *testing.T) {
	addr := freeAddr(t)
	// httptest serves one fixed certificate, so any test server's CA
	// verifies the server that comes up later at addr.
	ca := newAPIServer(t, "good").caPEM()
	// The connector logs each failed attempt right after it shows it in
	// the cluster's reason. The log hook holds the connector at its
	// second failure, so the test reads the reason of that attempt (and
	// not of a later one) without polling, and brings the server up
	// before the connector's next attempt.
	secondFailure := make(chan struct{})
	resume := make(chan struct{})
	var hold sync.Once
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) {
		o.Logger = slog.New(logHook(func(r slog.Record) {
			if r.Message == "cluster not reachable yet" && logAttr(r, "cluster") == "late" && logAttr(r, "attempt") == "2" {
				hold.Do(func() {
					close(secondFailure)
					<-resume
				})
			}
		}))
	})
	release := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(release) // runs before the harness stops: the connector is never left held
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "late", Kubeconfig: kubeconfig("https://"+addr, ca, "good")}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, secondFailure, "the connector's second failed attempt")
	c, err := h.m.Get("late")
	if err != nil || c.Status != fsm.StateConnecting || !strings.Contains(c.Reason, "retrying") || !strings.Contains(c.Reason, "attempt 2") {
		t.Fatalf("after two failed attempts: %s, reason %q (err %v); want Connecting, retrying after attempt 2", c.Status, c.Reason, err)
	}
	newAPIServerAt(t, addr, "good")
	release()
	// The connector's retry waits its backoff (BackoffInitial doubled, a
	// real timer: connect.go takes no clock) before it finds the server.
	h.waitStatus("late", fsm.StateRunning, 10*time.Second)
}

func TestCancelConnecting(t *testing.T) {
	h := newHarness(t, nil)
	addr := freeAddr(t)
	api := newAPIServer(t, "good")
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "c", Kubeconfig: kubeconfig("https://"+addr, api.caPEM(), "good")}); err != nil {
		t.Fatal(err)
	}
	c, err := h.m.Cancel(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != fsm.StateCanceling && c.Status != fsm.StateUnavailable {
		t.Fatalf("cancel answered %s", c.Status)
	}
	c = h.waitStatus("c", fsm.StateUnavailable, 5*time.Second)
	if !strings.Contains(c.Reason, "canceled") || c.LastOperation.State != OpCanceled {
		t.Errorf("after cancel: reason %q op %+v", c.Reason, c.LastOperation)
	}
	if _, err := h.m.Cancel(context.Background(), "c"); !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Errorf("cancel of an Unavailable cluster: %v, want ErrInvalidTransition", err)
	}
}

// TestHealthHysteresis drives the health sweeps as the health loop would,
// with a fake clock: a healthy cluster is probed once HealthInterval has
// passed, a suspect one every HealthInterval/3, FailureThreshold failures
// make it Unreachable and one success brings it back.
func TestHealthHysteresis(t *testing.T) {
	api := newAPIServer(t, "good")
	clk := newFakeClock()
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) { o.Clock = clk.Now })
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "h", Kubeconfig: api.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("h", fsm.StateRunning, 10*time.Second)
	e, _ := h.m.lookup("h")
	ctx := t.Context()
	hits := api.hits.Load()
	h.m.sweep(ctx, false)
	if got := api.hits.Load(); got != hits {
		t.Fatalf("a sweep before HealthInterval passed probed the cluster (%d requests)", got-hits)
	}
	api.mode.Store(modeNotReady)
	clk.Advance(h.m.opts.HealthInterval)
	for i := 1; i <= DefaultFailureThreshold; i++ {
		h.m.sweep(ctx, false)
		if s := e.machine.Current(); i < DefaultFailureThreshold && s != fsm.StateRunning {
			t.Fatalf("after %d failed probes the cluster is %s, want Running", i, s)
		}
		clk.Advance(h.m.suspectInterval())
	}
	c := h.waitStatus("h", fsm.StateUnreachable, 10*time.Second)
	if c.Reason == "" {
		t.Error("unreachable cluster has no reason")
	}
	h.waitEvent(pubsub.ClusterStatusChanged, "h", "Unreachable")
	if rec, _ := h.storedStatus("h"); rec.Status != fsm.StateUnreachable {
		t.Errorf("stored status %s, want Unreachable", rec.Status)
	}
	if _, err := h.m.Client("h"); err != nil {
		t.Errorf("an Unreachable cluster is still ready: %v", err)
	}
	api.mode.Store(modeOK)
	h.m.sweep(ctx, false)
	h.waitStatus("h", fsm.StateRunning, 10*time.Second)
	h.waitEvent(pubsub.ClusterStatusChanged, "h", "Running")
}

func TestHealthNeedsThreeFailures(t *testing.T) {
	api := newAPIServer(t, "good")
	h := newHarness(t, nil)
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "x", Kubeconfig: api.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("x", fsm.StateRunning, 10*time.Second)
	e, _ := h.m.lookup("x")
	api.mode.Store(modeNotReady)
	ctx := context.Background()
	for i := 1; i < DefaultFailureThreshold; i++ {
		h.m.probe(ctx, e)
		if s := e.machine.Current(); s != fsm.StateRunning {
			t.Fatalf("after %d failed probes the cluster is %s, want Running", i, s)
		}
	}
	// No health loop probes within a test (fastOptions): the probe that
	// reaches the threshold is this one.
	h.m.probe(ctx, e)
	if s := e.machine.Current(); s != fsm.StateUnreachable {
		t.Fatalf("after %d failed probes the cluster is %s, want Unreachable", DefaultFailureThreshold, s)
	}
	api.mode.Store(modeOK)
	h.m.probe(ctx, e)
	if s := e.machine.Current(); s != fsm.StateRunning {
		t.Fatalf("one successful probe left the cluster %s, want Running", s)
	}
}

func TestDeleteForgetsCluster(t *testing.T) {
	api := newAPIServer(t, "good")
	h := newHarness(t, nil)
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "d", Kubeconfig: api.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("d", fsm.StateRunning, 10*time.Second)
	c, err := h.m.Delete(context.Background(), "d", false)
	if err != nil || c.Status != fsm.StateDeleting {
		t.Fatalf("delete: %+v %v", c.Status, err)
	}
	h.waitEvent(pubsub.ClusterDeleted, "d", "")
	h.waitGone("d")
	if _, err := h.store.Get(storage.BucketClusters, "d"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("row still stored: %v", err)
	}
	if _, err := h.m.Delete(context.Background(), "d", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}

func TestReloadListsEveryRowAndReconnects(t *testing.T) {
	api := newAPIServer(t, "good")
	store := storagetest.Open(t)
	h := newHarness(t, store)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: n, Kubeconfig: api.kubeconfig()}); err != nil {
			t.Fatal(err)
		}
		h.waitStatus(n, fsm.StateRunning, 10*time.Second)
	}
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "broken", Kubeconfig: kubeconfig(api.srv.URL, api.caPEM(), "wrong")}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("broken", fsm.StateUnavailable, 10*time.Second)
	// A row that does not decode must still be listed.
	if err := store.Put(storage.BucketClusters, "damaged", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	h.stop()

	h2 := newHarness(t, store)
	got := h2.m.List(false)
	if len(got) != 5 {
		t.Fatalf("after reload %d clusters listed, want 5: %+v", len(got), got)
	}
	for _, n := range []string{"a", "b", "c"} {
		h2.waitStatus(n, fsm.StateRunning, 10*time.Second)
	}
	if c := h2.waitStatus("broken", fsm.StateUnavailable, time.Second); !strings.Contains(c.Reason, "kubeconfig") {
		t.Errorf("broken cluster's reason after reload: %q", c.Reason)
	}
	if c := h2.waitStatus("damaged", fsm.StateUnavailable, time.Second); !strings.Contains(c.Reason, "damaged") {
		t.Errorf("damaged row's reason: %q", c.Reason)
	}
	if _, err := h2.m.Delete(context.Background(), "damaged", false); err != nil {
		t.Errorf("a damaged row can be deleted: %v", err)
	}
}

func TestReloadResumesInterruptedWork(t *testing.T) {
	store := storagetest.Open(t)
	sealer := store.Sealer()
	put := func(r *record) {
		b, err := encodeRecord(r, sealer)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Put(storage.BucketClusters, r.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	put(&record{Name: "deleting", Kind: KindImported, Status: fsm.StateDeleting})
	put(&record{Name: "canceling", Kind: KindImported, Status: fsm.StateCanceling})
	put(&record{Name: "creating", Kind: KindCreated, Status: fsm.StateCreating, Unavailable: true})
	h := newHarness(t, store)
	if c := h.waitStatus("canceling", fsm.StateUnavailable, time.Second); c.Reason == "" {
		t.Error("an interrupted cancel has no reason")
	}
	// Without an installer an interrupted create cannot resume: it fails
	// and says why.
	if c := h.waitStatus("creating", fsm.StateUnavailable, 5*time.Second); !strings.Contains(c.Reason, "installer") {
		t.Errorf("interrupted create's reason: %q", c.Reason)
	}
	h.waitGone("deleting") // the interrupted delete finishes after reload
}

func TestFailedWriteChangesNothing(t *testing.T) {
	api := newAPIServer(t, "good")
	store := storagetest.Open(t)
	h := newHarness(t, store)
	store.Close()
	_, err := h.m.Import(context.Background(), model.ImportRequest{Name: "x", Kubeconfig: api.kubeconfig()})
	if !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("import with a closed store: %v, want ErrClosed", err)
	}
	if got := h.m.List(false); len(got) != 0 {
		t.Fatalf("failed import left %d clusters listed", len(got))
	}
}
