package pubsub

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitTimeout bounds every wait in these tests.
const waitTimeout = 5 * time.Second

// TestMain fails the run if any cskr dispatcher goroutine outlives the tests:
// every Bus a test creates must be closed and must stop.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if stacks := waitNoDispatcher(); stacks != "" {
			fmt.Fprintf(os.Stderr, "dispatcher goroutines leaked:\n%s\n", stacks)
			code = 1
		}
	}
	os.Exit(code)
}

func TestFanOutToEverySubscriberInOrder(t *testing.T) {
	bus := New(Options{})
	defer bus.Close()
	subs := []*Subscription{bus.Subscribe(), bus.Subscribe(), bus.Subscribe()}
	const n = 20
	for i := range n {
		bus.Publish(Event{Kind: ClusterStatusChanged, Cluster: fmt.Sprintf("c%02d", i)})
	}
	for si, s := range subs {
		for i := range n {
			e := receive(t, s)
			if want := fmt.Sprintf("c%02d", i); e.Cluster != want || e.Kind != ClusterStatusChanged {
				t.Fatalf("subscriber %d event %d = %+v, want cluster %s", si, i, e, want)
			}
		}
		s.Close()
	}
}

func TestPublishStampsZeroTimeOnly(t *testing.T) {
	bus := New(Options{})
	defer bus.Close()
	s := bus.Subscribe()
	defer s.Close()

	before := time.Now()
	bus.Publish(Event{Kind: ClusterCreated, Cluster: "a"})
	fixed := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	bus.Publish(Event{Kind: ClusterDeleted, Cluster: "b", Time: fixed})

	if e := receive(t, s); e.Time.Before(before) || e.Time.After(time.Now()) {
		t.Errorf("zero Time stamped as %v, want between %v and now", e.Time, before)
	}
	if e := receive(t, s); !e.Time.Equal(fixed) {
		t.Errorf("set Time changed to %v, want %v", e.Time, fixed)
	}
}

func TestPublishDoesNotBlockOnFullSubscriber(t *testing.T) {
	const buffer = 2
	bus := New(Options{Buffer: buffer})
	defer bus.Close()
	slow := bus.Subscribe() // never read until the end
	fast := bus.Subscribe()

	const n = 100
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			bus.Publish(Event{Kind: ClusterStatusChanged, Cluster: fmt.Sprint(i)})
			// The fast subscriber keeps up, so it misses nothing.
			if e, err := next(fast); err != nil || e.Cluster != fmt.Sprint(i) {
				t.Errorf("fast subscriber got %q, %v; want %d", e.Cluster, err, i)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Publish blocked behind a full subscriber")
	}

	// The slow subscriber kept the first events that fit its buffer and
	// lost the rest; its channel then ends when the bus closes.
	bus.Close()
	got := drain(t, slow)
	if len(got) != buffer || got[0].Cluster != "0" || got[1].Cluster != "1" {
		t.Fatalf("slow subscriber got %v, want the first %d events", got, buffer)
	}
}

func TestSubscriptionCloseStopsDelivery(t *testing.T) {
	bus := New(Options{})
	defer bus.Close()
	gone, stays := bus.Subscribe(), bus.Subscribe()

	bus.Publish(Event{Cluster: "first"})
	receive(t, gone)
	receive(t, stays)

	gone.Close()
	gone.Close() // idempotent
	bus.Publish(Event{Cluster: "second"})

	if e := receive(t, stays); e.Cluster != "second" {
		t.Fatalf("remaining subscriber got %q, want second", e.Cluster)
	}
	if got := drain(t, gone); len(got) != 0 {
		t.Fatalf("closed subscription received %v after Close", got)
	}
}

func TestSubscriptionCloseFromReaderWithFullBuffer(t *testing.T) {
	bus := New(Options{Buffer: 1})
	defer bus.Close()
	s := bus.Subscribe()
	for range 5 {
		bus.Publish(Event{})
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(waitTimeout):
		t.Fatal("Subscription.Close blocked on an undrained subscription")
	}
	if got := drain(t, s); len(got) != 1 {
		t.Fatalf("got %d buffered events after Close, want the 1 that fit", len(got))
	}
}

func TestBusCloseClosesEverySubscription(t *testing.T) {
	bus := New(Options{})
	subs := []*Subscription{bus.Subscribe(), bus.Subscribe()}
	closedEarly := bus.Subscribe()
	closedEarly.Close()
	bus.Publish(Event{Cluster: "buffered"})

	bus.Close()
	bus.Close() // idempotent

	for i, s := range subs {
		got := drain(t, s)
		if len(got) != 1 || got[0].Cluster != "buffered" {
			t.Errorf("subscriber %d got %v before its channel closed, want the buffered event", i, got)
		}
		s.Close() // after the bus: no effect, no block
	}
	drain(t, closedEarly)

	// Everything after Close is harmless and does not block.
	bus.Publish(Event{Cluster: "late"})
	late := bus.Subscribe()
	if got := drain(t, late); len(got) != 0 {
		t.Errorf("subscription made after Close received %v", got)
	}
	late.Close()
}

func TestConcurrentPublishSubscribeClose(t *testing.T) {
	bus := New(Options{Buffer: 4})
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			for i := range 200 {
				bus.Publish(Event{Cluster: fmt.Sprintf("p%d-%d", p, i)})
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 50 {
				s := bus.Subscribe()
				select {
				case <-s.C():
				default:
				}
				s.Close()
				if _, err := drainErr(s); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(waitTimeout):
		t.Fatal("concurrent Publish/Subscribe/Close did not finish")
	}
	// Close racing with publishers and subscribers.
	var wg2 sync.WaitGroup
	s := bus.Subscribe()
	wg2.Go(func() {
		for range 100 {
			bus.Publish(Event{})
		}
	})
	wg2.Go(bus.Close)
	wg2.Go(s.Close)
	wg2.Wait()
	drain(t, s)
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 10 {
		bus := New(Options{})
		s := bus.Subscribe()
		bus.Publish(Event{})
		receive(t, s)
		bus.Close()
		drain(t, s)
	}
	if stacks := waitNoDispatcher(); stacks != "" {
		t.Fatalf("dispatcher goroutines still running after Close:\n%s", stacks)
	}
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after closing every bus, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// receive returns the next event of s or fails the test after waitTimeout.
func receive(t *testing.T, s *Subscription) Event {
	t.Helper()
	e, err := next(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// next returns the next event of s; it may be called from any goroutine.
func next(s *Subscription) (Event, error) {
	select {
	case e, ok := <-s.C():
		if !ok {
			return Event{}, errors.New("subscription channel closed, want an event")
		}
		return e, nil
	case <-time.After(waitTimeout):
		return Event{}, errors.New("no event within the timeout")
	}
}

// drain returns what is left in s's channel once it is closed, failing the
// test if it is not closed within waitTimeout.
func drain(t *testing.T, s *Subscription) []Event {
	t.Helper()
	got, err := drainErr(s)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// drainErr is drain for goroutines other than the test's.
func drainErr(s *Subscription) ([]Event, error) {
	var got []Event
	timeout := time.After(waitTimeout)
	for {
		select {
		case e, ok := <-s.C():
			if !ok {
				return got, nil
			}
			got = append(got, e)
		case <-timeout:
			return got, fmt.Errorf("subscription channel not closed within the timeout (got %d events)", len(got))
		}
	}
}

// waitNoDispatcher waits up to waitTimeout for every cskr dispatcher
// goroutine to exit and returns the stacks of those still running.
func waitNoDispatcher() string {
	deadline := time.Now().Add(waitTimeout)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "cskr/pubsub") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
