package workflow

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// testWait bounds every wait of these tests.
const testWait = 10 * time.Second

// nextStall returns the next stall the sink gets, failing after testWait.
func nextStall(t *testing.T, c <-chan Stall) Stall {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(testWait):
		t.Fatal("no Stalled call")
		return Stall{}
	}
}

func TestStalledAfterDeadline(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return start } // a fake clock that stands still
	sink := &recordingSink{stalled: make(chan Stall)}
	release := make(chan struct{})
	waiting := make(chan *Reporter)
	st := Step{Name: "etcd", Deadline: time.Millisecond, Run: func(ctx context.Context, r *Reporter) error {
		r.Waiting("n2", "etcd on n2 healthy", &NodeError{Node: "n2", Err: errors.New("connection refused"), Hint: "see docker logs etcd on n2"})
		waiting <- r
		<-release
		return nil
	}}
	errc := make(chan error, 1)
	go func() {
		errc <- Run(context.Background(), []Step{st}, sink, RunOptions{Clock: clock, StallRepeat: time.Nanosecond})
	}()
	r := <-waiting

	got := nextStall(t, sink.stalled)
	want := Stall{Step: "etcd", Node: "n2", WaitingFor: "etcd on n2 healthy", LastError: "connection refused",
		Hint: "see docker logs etcd on n2", Since: start.Add(time.Millisecond)}
	if got != want {
		t.Fatalf("first stall\n got  %+v\n want %+v", got, want)
	}

	// What the step waits for changes: reported again.
	r.Waiting("n3", "etcd learner n3 promoted", errors.New("learner not in sync"))
	got = nextStall(t, sink.stalled)
	if got.Node != "n3" || got.WaitingFor != "etcd learner n3 promoted" || got.LastError != "learner not in sync" || got.Hint != "" {
		t.Fatalf("second stall %+v", got)
	}
	// n3's wait ends: n2's, still in progress, is shown again.
	r.Waiting("n3", "", nil)
	if got = nextStall(t, sink.stalled); got.Node != "n2" || got.WaitingFor != "etcd on n2 healthy" {
		t.Fatalf("stall after n3's wait ended %+v", got)
	}
	// Nothing waits: the step's latest report is what it is doing.
	r.Waiting("n2", "", nil)
	if got = nextStall(t, sink.stalled); got.Node != "" || got.WaitingFor != "started" || got.LastError != "" {
		t.Fatalf("stall with no wait in progress %+v", got)
	}
	r.Report("n1", "pulling zdnscloud/kubernetes:v1.36.3")
	if got = nextStall(t, sink.stalled); got.Node != "n1" || got.WaitingFor != "pulling zdnscloud/kubernetes:v1.36.3" {
		t.Fatalf("stall after a report %+v", got)
	}

	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// The watch ended with the step: a change now reports nothing.
	r.Waiting("n1", "something", nil)
	select {
	case s := <-sink.stalled:
		t.Fatalf("Stalled after the step ended: %+v", s)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestStalledAtMostEveryRepeat(t *testing.T) {
	sink := &recordingSink{stalled: make(chan Stall, 100)}
	first := make(chan struct{})
	st := Step{Name: "images", Deadline: time.Millisecond, Run: func(ctx context.Context, r *Reporter) error {
		r.Waiting("n1", "pull of a", nil)
		<-sink.stalled // the first stall
		close(first)
		for i := range 20 {
			r.Waiting("n1", "pull of a", errors.New(string(rune('a'+i))))
		}
		return nil
	}}
	if err := Run(context.Background(), []Step{st}, sink, RunOptions{StallRepeat: time.Hour}); err != nil {
		t.Fatal(err)
	}
	<-first
	if n := sink.stallCount(); n != 1 {
		t.Fatalf("%d stalls within the repeat interval, want 1", n)
	}
}

func TestNotStalledBeforeDeadline(t *testing.T) {
	sink := &recordingSink{}
	st := Step{Name: "kubeconfig", Deadline: time.Hour, Run: func(ctx context.Context, r *Reporter) error {
		r.Waiting("", "nothing much", errors.New("x"))
		return nil
	}}
	if err := Run(context.Background(), []Step{st}, sink, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := sink.stallCount(); n != 0 {
		t.Fatalf("%d stalls for a step that ended before its deadline", n)
	}
}

// TestDeadlineWatchNoLeak: whether the deadline passed or not, and
// whether the step ended or ctx did, no goroutine outlives Run.
func TestDeadlineWatchNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		deadline := time.Hour
		if i%2 == 0 {
			deadline = time.Nanosecond
		}
		sink := &recordingSink{}
		st := Step{Name: "s", Deadline: deadline, Run: func(ctx context.Context, r *Reporter) error {
			r.Waiting("n1", "x", nil)
			if i%3 == 0 {
				cancel()
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}}
		_ = Run(ctx, []Step{st}, sink, RunOptions{StallRepeat: time.Nanosecond})
		cancel()
	}
	// Run waits for its watcher; only goroutines of the runtime or of
	// other tests may still be winding down.
	deadline := time.Now().Add(testWait)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWaitingOnNilReporter(t *testing.T) {
	var r *Reporter
	r.Waiting("n1", "x", errors.New("y")) // must not panic
}
