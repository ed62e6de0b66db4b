package zke

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

func TestPollEvery(t *testing.T) {
	errFinal := errors.New("final")
	errTransient := errors.New("transient")
	tests := []struct {
		name      string
		results   []error // one per call; nil = done
		timeout   time.Duration
		wantErr   error // nil: poll succeeds
		wantCalls int
	}{
		{"done at once", []error{nil}, time.Second, nil, 1},
		{"done after retries", []error{errTransient, errTransient, nil}, time.Second, nil, 3},
		{"a final error stops at once", []error{errTransient, stopPolling(errFinal), nil}, time.Second, errFinal, 2},
		{"timeout keeps the last error", []error{errTransient}, 50 * time.Millisecond, errTransient, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := pollEvery(context.Background(), waitOn{}, 5*time.Millisecond, tt.timeout, "thing ready", func(context.Context) (bool, error) {
				r := tt.results[min(calls, len(tt.results)-1)]
				calls++
				return r == nil, r
			})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "thing ready: ") {
				t.Errorf("err %q does not say what was awaited", err)
			}
			if tt.wantCalls >= 0 && calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			var stop *stopError
			if errors.As(err, &stop) {
				t.Errorf("the stop marker leaks out: %v", err)
			}
		})
	}
}

// waitLog records what waits tell the step's reporter.
type waitLog struct{ calls []string }

func (w *waitLog) Waiting(node, what string, lastErr error) {
	s := node + "|" + what
	if lastErr != nil {
		s += "|" + lastErr.Error()
		var ne *workflow.NodeError
		if errors.As(lastErr, &ne) {
			s += "|hint=" + ne.Hint
		}
	}
	w.calls = append(w.calls, s)
}

func TestPollTellsTheReporter(t *testing.T) {
	log := &waitLog{}
	errDown := errors.New("kubelet is not running")
	results := []error{errDown, errors.New("other"), nil}
	calls := 0
	on := waitOn{rep: log, node: "n1", hint: func(err error) string {
		if errors.Is(err, errDown) {
			return "see docker logs kubelet"
		}
		return ""
	}}
	err := pollEvery(context.Background(), on, time.Millisecond, time.Minute, "kubelet ready", func(context.Context) (bool, error) {
		r := results[calls]
		calls++
		return r == nil, r
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"n1|kubelet ready|node n1: kubelet is not running: see docker logs kubelet|hint=see docker logs kubelet",
		"n1|kubelet ready|other",
		"n1|", // the wait ended
	}
	if !slices.Equal(log.calls, want) {
		t.Fatalf("reporter told\n %q\nwant\n %q", log.calls, want)
	}
	// Nobody to tell: no panic.
	if err := poll(context.Background(), waitOn{}, time.Minute, "x", func(context.Context) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
}
