package clustermanager

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitDone fails the test if ch is not closed within a generous bound
// (a failsafe against a hang, not a timing assertion).
func waitDone(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

func TestWorkQueueRunsOneItemPerKeyInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := newWorkQueue(ctx)
	var (
		mu      sync.Mutex
		order   []int
		running atomic.Int32
		overlap atomic.Bool
	)
	release := make(chan struct{})
	for i := range 5 {
		_, err := q.add("a", "item", false, func(context.Context) {
			if running.Add(1) != 1 {
				overlap.Store(true)
			}
			if i == 0 {
				<-release
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			running.Add(-1)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Another key is not held up by a's blocked item.
	otherDone := make(chan struct{})
	if _, err := q.add("b", "item", false, func(context.Context) { close(otherDone) }); err != nil {
		t.Fatal(err)
	}
	waitDone(t, otherDone, "b's item while a's first item blocks")
	if !q.busy("a") {
		t.Error("a is not busy while its item runs")
	}
	close(release)
	cancel()
	q.wait()
	if overlap.Load() {
		t.Error("two items of one key ran at once")
	}
	if want := []int{0, 1, 2, 3, 4}; len(order) != len(want) {
		t.Fatalf("order %v", order)
	} else {
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("order %v, want %v", order, want)
			}
		}
	}
	if q.busy("a") || q.busy("b") {
		t.Error("a key is busy after its worker ended")
	}
}

func TestWorkQueueInterruptCancelsRunningAndWaitingRuns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := newWorkQueue(ctx)
	started := make(chan struct{})
	var runErr, waitingErr, settleErr error
	if _, err := q.add("c", "create", true, func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		runErr = ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.add("c", "update", true, func(ctx context.Context) { waitingErr = ctx.Err() }); err != nil {
		t.Fatal(err)
	}
	settled := make(chan struct{})
	if _, err := q.add("c", "settle", false, func(ctx context.Context) { settleErr = ctx.Err(); close(settled) }); err != nil {
		t.Fatal(err)
	}
	waitDone(t, started, "the run started")
	if got := q.interrupt("c"); got != "create" {
		t.Errorf("interrupt found %q running, want create", got)
	}
	waitDone(t, settled, "the settle item ran")
	if !errors.Is(runErr, context.Canceled) || !errors.Is(waitingErr, context.Canceled) || settleErr != nil {
		t.Errorf("run %v, waiting run %v, settle %v: want the runs cancelled and the settle item not", runErr, waitingErr, settleErr)
	}
	if got := q.interrupt("idle"); got != "" {
		t.Errorf("interrupt of an idle key = %q", got)
	}
}

func TestWorkQueueDo(t *testing.T) {
	root, cancelRoot := context.WithCancel(context.Background())
	q := newWorkQueue(root)
	boom := errors.New("boom")
	if err := q.do(context.Background(), "k", "edit", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("do = %v, want fn's error", err)
	}

	// A waiter that gives up before its item begins: the item never runs.
	block := make(chan struct{})
	if _, err := q.add("k", "long", true, func(context.Context) { <-block }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	done := make(chan error, 1)
	go func() { done <- q.do(ctx, "k", "edit", func(context.Context) error { ran.Store(true); return nil }) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("abandoned do = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("do did not return when its context ended")
	}
	close(block)
	after := make(chan struct{})
	if _, err := q.add("k", "after", false, func(context.Context) { close(after) }); err != nil {
		t.Fatal(err)
	}
	waitDone(t, after, "the item after the abandoned one")
	if ran.Load() {
		t.Error("an abandoned item ran")
	}

	cancelRoot()
	q.wait()
	if _, err := q.add("k", "late", false, func(context.Context) {}); !errors.Is(err, errShuttingDown) {
		t.Errorf("add after shutdown = %v, want errShuttingDown", err)
	}
}
