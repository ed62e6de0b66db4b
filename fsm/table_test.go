package fsm

import (
	"slices"
	"testing"
)

// allStates and allEvents are written out here, not taken from the package,
// so a constant missing from States(), Events() or the table is noticed.
var (
	allStates = []State{
		StateNew, StateCreating, StateConnecting, StateUpdating, StateUnavailable,
		StateCanceling, StateDeleting, StateRunning, StateUnreachable, StateDeleted,
	}
	allEvents = []Event{
		EventCreate, EventCreateSucceeded, EventCreateFailed, EventImport,
		EventConnectSucceeded, EventConnectFailed, EventUpdate, EventUpdateSucceeded,
		EventUpdateFailed, EventCancel, EventCanceled, EventUnreachable, EventReachable,
		EventDelete, EventDeleted, EventDeleteFailed, EventReconnect, EventResume,
		EventRotateCertificates, EventRestore,
	}
)

// specTable is SPEC §2 written independently of table.go: state → event →
// destination. Pairs absent here must be refused.
func specTable() map[State]map[Event]State {
	return map[State]map[Event]State{
		StateNew: {
			EventCreate: StateCreating,
			EventImport: StateConnecting,
		},
		StateCreating: {
			EventCreateSucceeded: StateRunning,
			EventCreateFailed:    StateUnavailable,
			EventCancel:          StateCanceling,
			EventDelete:          StateDeleting,
		},
		StateConnecting: {
			EventConnectSucceeded: StateRunning,
			EventConnectFailed:    StateUnavailable,
			EventCancel:           StateCanceling,
			EventDelete:           StateDeleting,
		},
		StateUpdating: {
			EventUpdateSucceeded: StateRunning,
			EventUpdateFailed:    StateUnavailable,
			EventCancel:          StateCanceling,
			EventDelete:          StateDeleting,
		},
		StateUnavailable: {
			EventUpdate:             StateUpdating,
			EventRotateCertificates: StateUpdating,
			EventRestore:            StateUpdating,
			EventDelete:             StateDeleting,
			EventReconnect:          StateConnecting,
			EventResume:             StateCreating,
		},
		StateCanceling: {
			EventCanceled: StateUnavailable,
		},
		StateDeleting: {
			EventDeleted:      StateDeleted,
			EventDeleteFailed: StateUnavailable,
		},
		StateRunning: {
			EventUpdate:             StateUpdating,
			EventRotateCertificates: StateUpdating,
			EventRestore:            StateUpdating,
			EventUnreachable:        StateUnreachable,
			EventDelete:             StateDeleting,
		},
		StateUnreachable: {
			EventUpdate:             StateUpdating,
			EventRotateCertificates: StateUpdating,
			EventRestore:            StateUpdating,
			EventReachable:          StateRunning,
			EventDelete:             StateDeleting,
		},
		StateDeleted: {},
	}
}

func TestTableMatchesSpec(t *testing.T) {
	got := map[State]map[Event]State{}
	for _, s := range allStates {
		got[s] = map[Event]State{}
	}
	for _, r := range Transitions() {
		if len(r.Sources) == 0 {
			t.Errorf("rule %s has no source state", r.Event)
		}
		for _, src := range r.Sources {
			if _, dup := got[src][r.Event]; dup {
				t.Errorf("(%s, %q) appears twice in the table", r.Event, src)
			}
			if got[src] == nil {
				t.Errorf("rule %s has unknown source state %q", r.Event, src)
				got[src] = map[Event]State{}
			}
			got[src][r.Event] = r.Dst
		}
		if !slices.Contains(allStates, r.Dst) {
			t.Errorf("rule %s has unknown destination %q", r.Event, r.Dst)
		}
	}
	want := specTable()
	for _, s := range allStates {
		for _, ev := range allEvents {
			g, gok := got[s][ev]
			w, wok := want[s][ev]
			if gok != wok || g != w {
				t.Errorf("(%s, %q): table gives %q (allowed %v), spec says %q (allowed %v)", ev, s, g, gok, w, wok)
			}
		}
	}
}

func TestStatesAndEventsListEveryConstant(t *testing.T) {
	if !sameSet(States(), allStates) {
		t.Errorf("States() = %q, want %q", States(), allStates)
	}
	if !sameSet(Events(), allEvents) {
		t.Errorf("Events() = %q, want %q", Events(), allEvents)
	}
}

func TestTransitionsReturnsACopy(t *testing.T) {
	rules := Transitions()
	rules[0].Sources[0] = StateRunning
	rules[0].Dst = StateDeleted
	if again := Transitions(); again[0].Sources[0] == StateRunning || again[0].Dst == StateDeleted {
		t.Fatal("changing the result of Transitions changed the table")
	}
}

func sameSet[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Allows answers what a machine in the same state answers: a state read
// back from storage is asked exactly as a live machine is.
func TestAllowsAgreesWithCan(t *testing.T) {
	want := specTable()
	for _, s := range allStates {
		m := New[string]("c1", s, nil)
		for _, ev := range allEvents {
			_, spec := want[s][ev]
			if got := Allows(s, ev); got != m.Can(ev) || got != spec {
				t.Errorf("Allows(%q, %s) = %v; Can says %v, the spec %v", s, ev, got, m.Can(ev), spec)
			}
		}
	}
	if Allows("Frozen", EventDelete) {
		t.Error("a state outside the table allowed an event")
	}
}
