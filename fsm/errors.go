package fsm

import (
	"errors"
	"fmt"
)

// ErrInvalidTransition reports an event that the cluster's current state
// does not allow (the HTTP layer answers 409 InvalidState).
var ErrInvalidTransition = errors.New("invalid transition")

// TransitionError is the error of a refused event, for callers that need
// its fields. It wraps ErrInvalidTransition.
type TransitionError struct {
	Cluster string
	Event   Event
	State   State
}

// Error says which event was refused on which cluster in which state.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot %s cluster %s in state %s", e.Event, e.Cluster, displayState(e.State))
}

// Unwrap makes errors.Is(err, ErrInvalidTransition) hold.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// displayState names StateNew, whose value is empty, in messages.
func displayState(s State) string {
	if s == StateNew {
		return "New"
	}
	return string(s)
}
