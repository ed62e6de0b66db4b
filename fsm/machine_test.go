package fsm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// call is one hook call seen by recorder.
type call struct {
	hook    string // "persist" or "announce"
	t       Transition[string]
	current State // the machine's state during the call
}

// recorder is a Hooks that records calls and can fail Persist. It is a
// test double only to observe and steer the hooks; the machine is real.
type recorder struct {
	m          *Machine[string]
	persistErr error
	onPersist  func(ctx context.Context, t Transition[string])

	mu    sync.Mutex
	calls []call
}

func (r *recorder) Persist(ctx context.Context, t Transition[string]) error {
	if r.onPersist != nil {
		r.onPersist(ctx, t)
	}
	r.record("persist", t)
	return r.persistErr
}

func (r *recorder) Announce(t Transition[string]) { r.record("announce", t) }

func (r *recorder) record(hook string, t Transition[string]) {
	var cur State
	if r.m != nil {
		cur = r.m.Current()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call{hook, t, cur})
}

func (r *recorder) recorded() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func newMachine(initial State) (*Machine[string], *recorder) {
	r := &recorder{}
	m := New("c1", initial, r)
	r.m = m
	return m, r
}

func TestFireEveryStateEventPair(t *testing.T) {
	spec := specTable()
	for _, from := range allStates {
		for _, ev := range allEvents {
			to, allowed := spec[from][ev]
			t.Run(fmt.Sprintf("%s/%s", displayState(from), ev), func(t *testing.T) {
				m, r := newMachine(from)
				if got := m.Can(ev); got != allowed {
					t.Fatalf("Can(%s) = %v, want %v", ev, got, allowed)
				}
				payload := "edit " + string(ev)
				err := m.Fire(context.Background(), ev, payload)
				if !allowed {
					assertRefused(t, err, ev, from)
					if calls := r.recorded(); len(calls) != 0 {
						t.Errorf("a refused event called hooks: %+v", calls)
					}
					if m.Current() != from {
						t.Errorf("state moved to %q on a refused event", m.Current())
					}
					return
				}
				if err != nil {
					t.Fatalf("Fire(%s) from %q: %v", ev, from, err)
				}
				if m.Current() != to {
					t.Fatalf("state = %q, want %q", m.Current(), to)
				}
				want := Transition[string]{Cluster: "c1", Event: ev, From: from, To: to, Payload: payload}
				wantCalls := []call{{"persist", want, from}, {"announce", want, to}}
				if got := r.recorded(); !slices.Equal(got, wantCalls) {
					t.Errorf("hook calls = %+v\nwant %+v", got, wantCalls)
				}
			})
		}
	}
}

func assertRefused(t *testing.T, err error, ev Event, state State) {
	t.Helper()
	if !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("error = %v, want ErrInvalidTransition", err)
	}
	var te *TransitionError
	if !errors.As(err, &te) || te.Cluster != "c1" || te.Event != ev || te.State != state {
		t.Fatalf("error = %#v, want a *TransitionError{c1, %s, %q}", err, ev, state)
	}
	want := fmt.Sprintf("cannot %s cluster c1 in state %s", ev, displayState(state))
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
}

func TestRefusalMessages(t *testing.T) {
	for _, tc := range []struct {
		state State
		ev    Event
		want  string
	}{
		{StateRunning, EventCreate, "cannot create cluster c1 in state Running"},
		{StateNew, EventDelete, "cannot delete cluster c1 in state New"},
		{StateDeleting, EventDelete, "cannot delete cluster c1 in state Deleting"},
		{StateRunning, "bogus", "cannot bogus cluster c1 in state Running"},
	} {
		m, _ := newMachine(tc.state)
		if err := m.Fire(context.Background(), tc.ev, ""); err == nil || err.Error() != tc.want {
			t.Errorf("Fire(%s) in %q = %v, want %q", tc.ev, tc.state, err, tc.want)
		}
	}
}

func TestAvailableEvents(t *testing.T) {
	spec := specTable()
	for _, s := range append(allStates, "Bogus") {
		m, _ := newMachine(s)
		got := m.AvailableEvents()
		var want []Event
		for ev := range spec[s] {
			want = append(want, ev)
		}
		if !sameSet(got, want) {
			t.Errorf("AvailableEvents in %q = %q, want %q", s, got, want)
		}
	}
}

// persistError is a typed hook error, to check errors.As through Fire.
type persistError struct{ key string }

func (e *persistError) Error() string { return "write " + e.key + ": disk full" }

func TestPersistErrorKeepsState(t *testing.T) {
	m, r := newMachine(StateRunning)
	hookErr := &persistError{key: "clusters/c1"}
	r.persistErr = hookErr

	err := m.Fire(context.Background(), EventUpdate, "")
	var pe *persistError
	if !errors.As(err, &pe) || pe != hookErr {
		t.Fatalf("Fire error = %v, want it to wrap the hook's error", err)
	}
	if errors.Is(err, ErrInvalidTransition) {
		t.Errorf("a persist failure is reported as an invalid transition: %v", err)
	}
	for _, want := range []string{"update", "c1", "disk full"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if m.Current() != StateRunning {
		t.Fatalf("state = %q after a failed Persist, want Running", m.Current())
	}
	if calls := r.recorded(); len(calls) != 1 || calls[0].hook != "persist" {
		t.Fatalf("hook calls = %+v, want one Persist and no Announce", calls)
	}

	// The machine is not stuck: once Persist works, the event goes through.
	r.persistErr = nil
	if err := m.Fire(context.Background(), EventUpdate, ""); err != nil {
		t.Fatalf("Fire after the store recovered: %v", err)
	}
	if m.Current() != StateUpdating {
		t.Fatalf("state = %q, want Updating", m.Current())
	}
}

type ctxKey struct{}

func TestPersistGetsCallersContext(t *testing.T) {
	m, r := newMachine(StateNew)
	var got any
	r.onPersist = func(ctx context.Context, _ Transition[string]) { got = ctx.Value(ctxKey{}) }
	ctx := context.WithValue(context.Background(), ctxKey{}, "request-7")
	if err := m.Fire(ctx, EventImport, ""); err != nil {
		t.Fatal(err)
	}
	if got != "request-7" {
		t.Fatalf("Persist saw ctx value %v, want the caller's", got)
	}
}

func TestFireWithDoneContextChangesNothing(t *testing.T) {
	m, r := newMachine(StateRunning)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.Fire(ctx, EventUnreachable, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if m.Current() != StateRunning || len(r.recorded()) != 0 {
		t.Fatalf("state %q, calls %+v: want Running and no hook call", m.Current(), r.recorded())
	}
	// A refused event is still reported as such with a done ctx.
	if err := m.Fire(ctx, EventCreate, ""); !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("refused event with done ctx: error = %v, want ErrInvalidTransition", err)
	}
}

func TestCancelAfterPersistStillCompletes(t *testing.T) {
	m, r := newMachine(StateCreating)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The caller gives up right after the transition was saved: the
	// in-memory state must follow the saved one.
	r.onPersist = func(context.Context, Transition[string]) { cancel() }
	if err := m.Fire(ctx, EventCreateFailed, "ssh refused"); err != nil {
		t.Fatalf("Fire: %v", err)
	}
	if m.Current() != StateUnavailable {
		t.Fatalf("state = %q, want Unavailable", m.Current())
	}
	if calls := r.recorded(); len(calls) != 2 || calls[1].hook != "announce" {
		t.Fatalf("hook calls = %+v, want Persist then Announce", calls)
	}
}

// queryingHooks asks its machine questions from inside the hooks.
type queryingHooks struct {
	m                     *Machine[string]
	persistCan            bool
	announceCan           bool
	announceAvailable     []Event
	persistCur, announcer State
}

func (q *queryingHooks) Persist(context.Context, Transition[string]) error {
	q.persistCan, q.persistCur = q.m.Can(EventUnreachable), q.m.Current()
	return nil
}

func (q *queryingHooks) Announce(Transition[string]) {
	q.announceCan, q.announceAvailable, q.announcer = q.m.Can(EventReachable), q.m.AvailableEvents(), q.m.Current()
}

func TestHooksMayQueryTheMachine(t *testing.T) {
	q := &queryingHooks{}
	q.m = New[string]("c1", StateRunning, q)
	done := make(chan error, 1)
	go func() { done <- q.m.Fire(context.Background(), EventUnreachable, "") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Can/Current/AvailableEvents from inside a hook deadlocked")
	}
	if !q.persistCan || q.persistCur != StateRunning {
		t.Errorf("during Persist: Can(unreachable)=%v, Current=%q; want the old state's answers", q.persistCan, q.persistCur)
	}
	wantAvail := []Event{EventUpdate, EventReachable, EventDelete, EventRotateCertificates, EventRestore}
	if !q.announceCan || q.announcer != StateUnreachable || !slices.Equal(q.announceAvailable, wantAvail) {
		t.Errorf("during Announce: Can(reachable)=%v, Current=%q, AvailableEvents=%q; want the new state's",
			q.announceCan, q.announcer, q.announceAvailable)
	}
}

// serialHooks checks that Persist/Announce pairs never overlap and records
// the announced chain of transitions.
type serialHooks struct {
	inFlight  atomic.Int32
	overlap   atomic.Bool
	mu        sync.Mutex
	announced []Transition[string]
}

func (h *serialHooks) Persist(context.Context, Transition[string]) error {
	if h.inFlight.Add(1) != 1 {
		h.overlap.Store(true)
	}
	return nil
}

func (h *serialHooks) Announce(t Transition[string]) {
	h.mu.Lock()
	h.announced = append(h.announced, t)
	h.mu.Unlock()
	h.inFlight.Add(-1)
}

func TestConcurrentFire(t *testing.T) {
	h := &serialHooks{}
	m := New[string]("c1", StateRunning, h)
	const workers, rounds = 8, 200
	var ok atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				ev := EventUnreachable
				if (w+i)%2 == 0 {
					ev = EventReachable
				}
				err := m.Fire(context.Background(), ev, "")
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, ErrInvalidTransition):
					t.Errorf("Fire(%s): %v", ev, err)
				}
				_ = m.Can(EventUpdate)
				_ = m.AvailableEvents()
				_ = m.Current()
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("concurrent Fire did not finish")
	}
	if h.overlap.Load() {
		t.Error("two transitions ran their hooks at the same time")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if int(ok.Load()) != len(h.announced) {
		t.Fatalf("%d Fire calls succeeded, %d transitions announced", ok.Load(), len(h.announced))
	}
	prev := StateRunning
	for i, tr := range h.announced {
		if tr.From != prev {
			t.Fatalf("transition %d goes from %q, but the previous one ended in %q", i, tr.From, prev)
		}
		prev = tr.To
	}
	if m.Current() != prev {
		t.Fatalf("final state %q, last announced %q", m.Current(), prev)
	}
}
