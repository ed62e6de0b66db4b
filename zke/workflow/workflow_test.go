package workflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type recordingSink struct {
	mu           sync.Mutex
	progress     []Progress
	lines        []Line
	checkpoints  []string
	fingerprints map[string]string
	stalls       []Stall
	// stalled, when not nil, gets every stall too (the test reads it).
	stalled chan Stall
	failAt  string
}

func (s *recordingSink) Progress(p Progress) {
	s.mu.Lock()
	s.progress = append(s.progress, p)
	s.mu.Unlock()
}
func (s *recordingSink) Log(l Line) { s.mu.Lock(); s.lines = append(s.lines, l); s.mu.Unlock() }
func (s *recordingSink) Checkpoint(_ context.Context, step, fingerprint string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if step == s.failAt {
		return errors.New("disk full")
	}
	s.checkpoints = append(s.checkpoints, step)
	if s.fingerprints == nil {
		s.fingerprints = map[string]string{}
	}
	s.fingerprints[step] = fingerprint
	return nil
}
func (s *recordingSink) Stalled(st Stall) {
	s.mu.Lock()
	s.stalls = append(s.stalls, st)
	s.mu.Unlock()
	if s.stalled != nil {
		s.stalled <- st
	}
}

// stallCount is how many stalls the sink got.
func (s *recordingSink) stallCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stalls)
}

func steps(names []string, fail string, ran *[]string) []Step {
	var out []Step
	for _, n := range names {
		out = append(out, Step{Name: n, Run: func(ctx context.Context, r *Reporter) error {
			*ran = append(*ran, n)
			r.Advance(0.5, "n1", "half way")
			if n == fail {
				return &NodeError{Node: "n1", Err: errors.New("boom"), Hint: "fix it"}
			}
			return nil
		}})
	}
	return out
}

func TestRun(t *testing.T) {
	names := []string{"connect", "preflight", "etcd", "addons"}
	cases := []struct {
		name, fail, failCheckpoint string
		wantRan, wantCheckpoints   []string
		wantStep                   string
	}{
		{"all succeed", "", "", names, names, ""},
		{"step fails", "etcd", "", names[:3], names[:2], "etcd"},
		{"checkpoint fails", "", "preflight", names[:2], names[:1], ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			sink := &recordingSink{failAt: tc.failCheckpoint}
			err := Run(context.Background(), steps(names, tc.fail, &ran), sink, RunOptions{})
			if fmt.Sprint(ran) != fmt.Sprint(tc.wantRan) || fmt.Sprint(sink.checkpoints) != fmt.Sprint(tc.wantCheckpoints) {
				t.Errorf("ran %v checkpoints %v, want %v %v", ran, sink.checkpoints, tc.wantRan, tc.wantCheckpoints)
			}
			var se *StepError
			switch {
			case tc.wantStep != "":
				if !errors.As(err, &se) || se.Step != tc.wantStep || se.Index != 3 || NodeOf(err) != "n1" {
					t.Errorf("error %v, want StepError at %s", err, tc.wantStep)
				}
			case tc.failCheckpoint != "":
				if err == nil || errors.As(err, &se) {
					t.Errorf("checkpoint failure: %v", err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
			last := 0
			for _, p := range sink.progress {
				if p.Percent < last || p.Percent > 100 || p.Total != len(names) {
					t.Errorf("progress %+v goes backwards or out of range", p)
				}
				last = p.Percent
			}
			if tc.name == "all succeed" && last != 100 {
				t.Errorf("final percent %d", last)
			}
		})
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	s := []Step{
		{Name: "wait", Run: func(ctx context.Context, r *Reporter) error {
			close(started)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Minute):
				return errors.New("not cancelled")
			}
		}},
		{Name: "never", Run: func(context.Context, *Reporter) error { t.Error("ran after cancel"); return nil }},
	}
	go func() { <-started; cancel() }()
	err := Run(ctx, s, &recordingSink{}, RunOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v", err)
	}
}

func TestForEachLimitsAndJoins(t *testing.T) {
	var running, peak atomic.Int32
	items := []int{1, 2, 3, 4, 5, 6}
	err := ForEach(context.Background(), items, 2, func(ctx context.Context, i int) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		if i%2 == 0 {
			return &NodeError{Node: fmt.Sprint(i), Err: errors.New("bad")}
		}
		return nil
	})
	if peak.Load() > 2 {
		t.Errorf("peak concurrency %d > 2", peak.Load())
	}
	var ne *NodeError
	if !errors.As(err, &ne) {
		t.Fatalf("joined error %v has no NodeError", err)
	}
	if got := len(err.(interface{ Unwrap() []error }).Unwrap()); got != 3 {
		t.Errorf("%d errors joined, want 3", got)
	}
}

func TestUserFixable(t *testing.T) {
	base := errors.New("port 2379 in use")
	err := fmt.Errorf("preflight: %w", UserFixable(base))
	if !errors.Is(err, ErrUserFixable) || !errors.Is(err, base) {
		t.Errorf("classification lost: %v", err)
	}
	if UserFixable(nil) != nil {
		t.Error("UserFixable(nil) != nil")
	}
}
