// Package fsm is the cluster state machine of SPEC §2 on
// github.com/looplab/fsm: the states, the events, the transition table and
// the hooks through which every transition is persisted (before the state
// moves) and then announced. States and events are the only vocabulary the
// rest of singlecloud uses to ask "may this happen now?".
package fsm

// State is a cluster's lifecycle state.
type State string

// The states. Unready: Creating, Connecting, Updating, Unavailable,
// Canceling, Deleting. Ready: Running, Unreachable.
const (
	// StateNew is the state of a cluster not yet created or imported.
	StateNew         State = ""
	StateCreating    State = "Creating"
	StateConnecting  State = "Connecting"
	StateUpdating    State = "Updating"
	StateUnavailable State = "Unavailable"
	StateCanceling   State = "Canceling"
	StateDeleting    State = "Deleting"
	StateRunning     State = "Running"
	StateUnreachable State = "Unreachable"
	// StateDeleted is terminal: the cluster's row is gone.
	StateDeleted State = "Deleted"
)

// Ready reports whether s belongs to the ready list (SPEC §2).
func (s State) Ready() bool { return s == StateRunning || s == StateUnreachable }

// Settled reports whether no operation runs in s: the cluster rests in it
// until an admin or the health loop moves it (Running, Unreachable,
// Unavailable). A client that sees a settled state may act on it at once:
// an operation's last write is the transition into it.
func (s State) Settled() bool { return s.Ready() || s == StateUnavailable }

// Busy reports whether an operation owns a cluster in s: its worker is
// creating, connecting, updating, cancelling or deleting it, and only an
// interrupting event (cancel, delete) may be fired from outside it.
func (s State) Busy() bool {
	switch s {
	case StateCreating, StateConnecting, StateUpdating, StateCanceling, StateDeleting:
		return true
	}
	return false
}

// UnavailableFlag says what a cluster's stored unavailable flag becomes
// when it enters s (SPEC §2): set while it is being created or updated and
// once Unavailable, cleared once it is ready or connecting; set is false
// for the states that leave it as it was (Canceling, Deleting).
func (s State) UnavailableFlag() (unavailable, set bool) {
	switch {
	case s.Ready(), s == StateConnecting:
		return false, true
	case s == StateCanceling, s == StateDeleting:
		return false, false
	}
	return true, true
}

// Listed reports whether a cluster in s exists for the API: not reserved
// before its first write (New) and not gone (Deleted).
func (s State) Listed() bool { return s != StateNew && s != StateDeleted }

// Event is a named trigger of a transition.
type Event string

// The events (SPEC §2, plus reconnect and resume for Unavailable clusters).
const (
	EventCreate           Event = "create"
	EventCreateSucceeded  Event = "createSucceeded"
	EventCreateFailed     Event = "createFailed"
	EventImport           Event = "import"
	EventConnectSucceeded Event = "connectSucceeded"
	EventConnectFailed    Event = "connectFailed"
	EventUpdate           Event = "update"
	EventUpdateSucceeded  Event = "updateSucceeded"
	EventUpdateFailed     Event = "updateFailed"
	EventCancel           Event = "cancel"
	EventCanceled         Event = "canceled"
	EventUnreachable      Event = "unreachable"
	EventReachable        Event = "reachable"
	EventDelete           Event = "delete"
	EventDeleted          Event = "deleted"
	// EventDeleteFailed ends a delete that could not clean every host
	// (Deleting → Unavailable).
	EventDeleteFailed Event = "deleteFailed"
	// EventReconnect retries the connection of an Unavailable imported
	// cluster (Unavailable → Connecting).
	EventReconnect Event = "reconnect"
	// EventResume resumes an Unavailable created cluster's unfinished
	// create (Unavailable → Creating).
	EventResume Event = "resume"
	// EventRotateCertificates starts a rotation of a created cluster's
	// certificates; it runs in Updating and ends like an update.
	EventRotateCertificates Event = "rotateCertificates"
	// EventRestore starts a restore of a created cluster's etcd from a
	// snapshot; it runs in Updating and ends like an update.
	EventRestore Event = "restore"
)
