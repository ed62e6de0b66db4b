package clustermanager

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/pubsub"
)

// The unit tests never sleep to let the manager get on: they wait for the
// event that says it did. The manager publishes every state change on its
// bus after the change is saved and in memory, so a condition on the
// manager's state is checked once after subscribing and again after every
// event; steps of an installer run are signalled by the test double
// (stepInstaller.blocked); a cluster's queued work is awaited by queueing
// a no-op behind it (settle); and time passes when a test advances its
// fakeClock. Every wait still has a bound, far above what it should take:
// reaching it means a hang, not a slow machine.

// waitBound is the failsafe bound of a wait that states none.
const waitBound = 10 * time.Second

// awaitBus returns once cond holds, checking it now and after every event
// published on bus. It checks after every event, whatever cluster it is
// about: the bus drops events for a subscriber whose buffer is full, but
// the events still buffered then each trigger a check, and the change
// behind a dropped event happened before it was published. It fails tb if
// cond does not hold within bound or the bus closes first.
func awaitBus(tb testing.TB, bus *pubsub.Bus, bound time.Duration, what string, cond func() bool) {
	tb.Helper()
	sub := bus.Subscribe() // before the first check: no change slips between
	defer sub.Close()
	if cond() {
		return
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-sub.C():
			if cond() {
				return
			}
			if !ok {
				tb.Fatalf("the bus closed while waiting for %s", what)
			}
		case <-timer.C:
			if cond() {
				return
			}
			tb.Fatalf("%s did not happen within %s", what, bound)
		}
	}
}

// waitStatus waits for the cluster to reach want and returns its view; d
// bounds the wait.
func (h *harness) waitStatus(name string, want fsm.State, d time.Duration) Cluster {
	h.t.Helper()
	var c Cluster
	var err error
	awaitBus(h.t, h.bus, d, "cluster "+name+" "+string(want), func() bool {
		c, err = h.m.Get(name)
		return err == nil && c.Status == want
	})
	return c
}

// waitGone waits until the cluster is no longer listed (its delete ended).
func (h *harness) waitGone(name string) {
	h.t.Helper()
	awaitBus(h.t, h.bus, waitBound, "the removal of cluster "+name, func() bool {
		_, err := h.m.Get(name)
		return errors.Is(err, ErrNotFound)
	})
}

// settle returns once every item queued on the cluster's worker so far has
// run: it queues a no-op behind them and waits for it. Use it to await work
// whose end publishes nothing (a delete whose removal failed to persist).
func (h *harness) settle(name string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := h.m.queue.do(ctx, name, "test barrier", func(context.Context) error { return nil }); err != nil {
		h.t.Fatalf("the work queued on cluster %s did not end: %v", name, err)
	}
}

// fakeClock is an injectable Options.Clock that moves only when the test
// advances it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now is the clock's time; pass it as Options.Clock.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// logHook is a slog.Handler that hands every record to the func, on the
// goroutine that logs it, before that goroutine goes on: a test learns
// what the manager did (and may hold it there) without polling. It drops
// attributes added with WithAttrs and groups; the manager adds none.
type logHook func(r slog.Record)

func (h logHook) Enabled(context.Context, slog.Level) bool { return true }

func (h logHook) Handle(_ context.Context, r slog.Record) error {
	h(r)
	return nil
}

func (h logHook) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h logHook) WithGroup(string) slog.Handler { return h }

// logAttr returns the text of r's attribute key ("" if it has none).
func logAttr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}
