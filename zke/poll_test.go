package zke

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
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
			err := pollEvery(context.Background(), 5*time.Millisecond, tt.timeout, "thing ready", func(context.Context) (bool, error) {
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
