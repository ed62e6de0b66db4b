package clustermanager

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// recordingObserver keeps what the manager told it, one string per call.
type recordingObserver struct {
	mu     sync.Mutex
	calls  []string
	probes []error
	bad    []string // durations that made no sense
}

func (o *recordingObserver) add(call string, d time.Duration, mayBeUnknown bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, call)
	if d < 0 && !mayBeUnknown || d > time.Minute {
		o.bad = append(o.bad, call+" "+d.String())
	}
}

func (o *recordingObserver) OperationStarted(kind string) { o.add("started "+kind, 0, false) }
func (o *recordingObserver) OperationEnded(kind, outcome string, d time.Duration) {
	o.add("ended "+kind+" "+outcome, d, true)
}
func (o *recordingObserver) StepEnded(kind, step string, d time.Duration) {
	o.add("step "+kind+" "+step, d, false)
}
func (o *recordingObserver) ProbeDone(d time.Duration, err error) {
	o.add("probe", d, false)
	o.mu.Lock()
	o.probes = append(o.probes, err)
	o.mu.Unlock()
}

func (o *recordingObserver) snapshot() ([]string, []error, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.calls), slices.Clone(o.probes), slices.Clone(o.bad)
}

// waitCall waits (bounded) until call was observed.
func (o *recordingObserver) waitCall(t *testing.T, call string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		calls, _, _ := o.snapshot()
		if slices.Contains(calls, call) {
			return calls
		}
		if time.Now().After(deadline) {
			t.Fatalf("observer never got %q; got %q", call, calls)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The Observer learns of every operation's start and end, each step that
// ran, and each health probe, with names from fixed sets only.
func TestObserverSeesOperationsStepsAndProbes(t *testing.T) {
	tests := []struct {
		name      string
		failStep  string
		wantState fsm.State
		wantCalls []string
	}{
		{"create succeeds", "", fsm.StateRunning, []string{
			"started create", "step create connect", "step create certificates", "step create etcd", "step create kubeconfig", "ended create succeeded"}},
		{"create fails in etcd", "etcd", fsm.StateUnavailable, []string{
			"started create", "step create connect", "step create certificates", "ended create failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newAPIServer(t, "good")
			obs := &recordingObserver{}
			inst := &stepInstaller{kubeconfig: api.kubeconfig(), failStep: tt.failStep}
			h := newHarnessWith(t, storagetest.Open(t), func(o *Options) { o.Installer = inst; o.Observer = obs })
			if _, err := h.m.Create(context.Background(), createConfig(t, "obs")); err != nil {
				t.Fatal(err)
			}
			h.waitStatus("obs", tt.wantState, 10*time.Second)
			calls := obs.waitCall(t, tt.wantCalls[len(tt.wantCalls)-1])
			if !slices.Equal(calls, tt.wantCalls) {
				t.Fatalf("observed %q, want %q", calls, tt.wantCalls)
			}
			if _, _, bad := obs.snapshot(); len(bad) > 0 {
				t.Fatalf("implausible durations: %q", bad)
			}
		})
	}

	t.Run("health probes", func(t *testing.T) {
		api := newAPIServer(t, "good")
		obs := &recordingObserver{}
		h := newHarnessWith(t, storagetest.Open(t), func(o *Options) { o.Observer = obs })
		if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "p", Kubeconfig: api.kubeconfig()}); err != nil {
			t.Fatal(err)
		}
		h.waitStatus("p", fsm.StateRunning, 10*time.Second)
		obs.waitCall(t, "ended import succeeded")
		e, _ := h.m.lookup("p")
		h.m.probe(context.Background(), e)
		api.mode.Store(modeNotReady)
		h.m.probe(context.Background(), e)
		_, probes, bad := obs.snapshot()
		if len(probes) != 2 || probes[0] != nil || probes[1] == nil {
			t.Fatalf("probe errors observed %v, want [nil, an error]", probes)
		}
		if len(bad) > 0 {
			t.Fatalf("implausible durations: %q", bad)
		}
	})
}

// An operation that a delete interrupts is counted as ended (canceled), as
// its history row says, so that started and ended operations balance.
func TestObserverCountsAnInterruptedOperation(t *testing.T) {
	api := newAPIServer(t, "good")
	api.mode.Store(modeNotReady) // the connection keeps retrying
	obs := &recordingObserver{}
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) { o.Observer = obs })
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "p", Kubeconfig: api.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	obs.waitCall(t, "started import")
	if _, err := h.m.Delete(context.Background(), "p", false); err != nil {
		t.Fatal(err)
	}
	calls := obs.waitCall(t, "ended delete succeeded")
	if !slices.Contains(calls, "ended import canceled") {
		t.Fatalf("observed %q: the interrupted import never ended", calls)
	}
	started, ended := 0, 0
	for _, c := range calls {
		switch {
		case strings.HasPrefix(c, "started "):
			started++
		case strings.HasPrefix(c, "ended "):
			ended++
		}
	}
	if started != ended {
		t.Errorf("observed %q: %d started, %d ended", calls, started, ended)
	}
}

// Without an Observer the manager runs as before (the no-op one).
func TestNilObserverIsNoOp(t *testing.T) {
	h := newHarness(t, nil)
	if _, ok := h.m.opts.Observer.(noObserver); !ok {
		t.Fatalf("Observer of Options without one = %T, want noObserver", h.m.opts.Observer)
	}
}
