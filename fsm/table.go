package fsm

// Rule says that Event moves a cluster in any of Sources to Dst.
type Rule struct {
	Event   Event
	Sources []State
	Dst     State
}

// Transitions returns the transition table of SPEC §2, plus reconnect and
// resume for Unavailable clusters and deleteFailed for Deleting ones. It is the machine's only source of
// truth: every Machine is built from it, and an (event, state) pair absent
// from it is refused. The result is a fresh copy.
func Transitions() []Rule {
	return []Rule{
		{EventCreate, []State{StateNew}, StateCreating},
		{EventCreateSucceeded, []State{StateCreating}, StateRunning},
		{EventCreateFailed, []State{StateCreating}, StateUnavailable},
		{EventImport, []State{StateNew}, StateConnecting},
		{EventConnectSucceeded, []State{StateConnecting}, StateRunning},
		{EventConnectFailed, []State{StateConnecting}, StateUnavailable},
		{EventUpdate, []State{StateRunning, StateUnreachable, StateUnavailable}, StateUpdating},
		{EventUpdateSucceeded, []State{StateUpdating}, StateRunning},
		{EventUpdateFailed, []State{StateUpdating}, StateUnavailable},
		{EventCancel, []State{StateCreating, StateUpdating, StateConnecting}, StateCanceling},
		{EventCanceled, []State{StateCanceling}, StateUnavailable},
		{EventUnreachable, []State{StateRunning}, StateUnreachable},
		{EventReachable, []State{StateUnreachable}, StateRunning},
		// A running operation is cancelled by the caller before delete
		// (SPEC §2); Deleting and Canceling refuse it.
		{EventDelete, []State{
			StateCreating, StateConnecting, StateUpdating, StateUnavailable, StateRunning, StateUnreachable,
		}, StateDeleting},
		{EventDeleted, []State{StateDeleting}, StateDeleted},
		// A delete that could not clean every host leaves the cluster
		// Unavailable with the reason, from where the admin retries or
		// forces it: Deleting is never a dead end.
		{EventDeleteFailed, []State{StateDeleting}, StateUnavailable},
		{EventReconnect, []State{StateUnavailable}, StateConnecting},
		{EventResume, []State{StateUnavailable}, StateCreating},
		{EventRotateCertificates, []State{StateRunning, StateUnreachable, StateUnavailable}, StateUpdating},
		{EventRestore, []State{StateRunning, StateUnreachable, StateUnavailable}, StateUpdating},
	}
}

// States lists every state, so a state read back from storage can be
// checked before a Machine is built on it.
func States() []State {
	return []State{
		StateNew, StateCreating, StateConnecting, StateUpdating, StateUnavailable,
		StateCanceling, StateDeleting, StateRunning, StateUnreachable, StateDeleted,
	}
}

// Events lists every event, in the order of the table.
func Events() []Event {
	rules := Transitions()
	events := make([]Event, len(rules))
	for i, r := range rules {
		events[i] = r.Event
	}
	return events
}

// Allows reports whether the table lets ev move a cluster in state s. It is
// Machine.Can for a caller that holds a state rather than a machine: a
// state read back from storage, or the state a view was built in.
func Allows(s State, ev Event) bool {
	_, ok := allowedTable()[edge{ev, s}]
	return ok
}
