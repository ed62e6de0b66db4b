package fsm

import "testing"

func TestStatePredicates(t *testing.T) {
	tests := []struct {
		state                        State
		ready, settled, busy, listed bool
	}{
		{StateNew, false, false, false, false},
		{StateCreating, false, false, true, true},
		{StateConnecting, false, false, true, true},
		{StateUpdating, false, false, true, true},
		{StateCanceling, false, false, true, true},
		{StateDeleting, false, false, true, true},
		{StateDeleted, false, false, false, false},
		{StateUnavailable, false, true, false, true},
		{StateRunning, true, true, false, true},
		{StateUnreachable, true, true, false, true},
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
		if got := tt.state.Busy(); got != tt.busy {
			t.Errorf("%q.Busy() = %v, want %v", tt.state, got, tt.busy)
		}
		if got := tt.state.Listed(); got != tt.listed {
			t.Errorf("%q.Listed() = %v, want %v", tt.state, got, tt.listed)
		}
	}
}
