package fsm

import "fmt"

// Edit is an admin change of a cluster's stored record that is not a
// transition: the state does not move, but only some states allow it,
// because an operation running in the others could overwrite the edit.
// Edits are asked of the machine (CanEdit) like events, never by comparing
// states by hand.
type Edit string

// The edits.
const (
	// EditForgetHostKey drops the SSH host key pinned for one node, so
	// that the next operation records the key the node presents then.
	EditForgetHostKey Edit = "forgetHostKey"
)

// editRule is one row of the edit table.
type editRule struct {
	edit    Edit
	what    string // for messages: "forget a pinned host key of"
	allowed func(State) bool
}

// editTable lists every edit and the states that allow it: only settled
// ones, where no operation runs whose checkpoints could overwrite the edit.
func editTable() []editRule {
	return []editRule{
		{EditForgetHostKey, "forget a pinned host key of", State.Settled},
	}
}

// EditError is the error of an edit the current state refuses. It wraps
// ErrInvalidTransition, so the API answers it like a refused event (409).
type EditError struct {
	Cluster string
	Edit    Edit
	State   State
}

// Error says which edit was refused on which cluster in which state.
func (e *EditError) Error() string {
	what := string(e.Edit)
	for _, r := range editTable() {
		if r.edit == e.Edit {
			what = r.what
		}
	}
	return fmt.Sprintf("cannot %s cluster %s in state %s: wait for its operation to end", what, e.Cluster, displayState(e.State))
}

// Unwrap makes errors.Is(err, ErrInvalidTransition) hold.
func (e *EditError) Unwrap() error { return ErrInvalidTransition }

// CanEdit returns nil if the current state allows ed, else an *EditError.
// Like Can, it does not wait for a running Fire.
func (m *Machine[P]) CanEdit(ed Edit) error {
	cur := m.Current()
	if AllowsEdit(cur, ed) {
		return nil
	}
	return &EditError{Cluster: m.cluster, Edit: ed, State: cur}
}

// AllowsEdit reports whether state s allows ed: CanEdit for a caller that
// holds a state rather than a machine.
func AllowsEdit(s State, ed Edit) bool {
	for _, r := range editTable() {
		if r.edit == ed && r.allowed(s) {
			return true
		}
	}
	return false
}
