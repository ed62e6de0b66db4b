package fsm

import "testing"

func TestStatePredicates(t *testing.T) {
	tests := []struct {
		state          State
		ready, settled bool
	}{
		{StateNew, false, false},
		{StateCreating, false, false},
		{StateConnecting, false, false},
		{StateUpdating, false, false},
		{StateCanceling, false, false},
		{StateDeleting, false, false},
		{StateDeleted, false, false},
		{StateUnavailable, false, true},
		{StateRunning, true, true},
		{StateUnreachable, true, true},
	}
	if len(tests) != len(States()) {
		t.Fatalf("the table covers %d states, the machine has %d", len(tests), len(States()))
	}
	for _, tt := range tests {
		if got := tt.state.Ready(); got != tt.ready {
			t.Errorf("%q.Ready() = %v, want %v", tt.state, got, tt.ready)
		}
		if got := tt.state.Settled(); got != tt.settled {
			t.Errorf("%q.Settled() = %v, want %v", tt.state, got, tt.settled)
		}
	}
}
