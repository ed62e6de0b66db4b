package workflow

import (
	"errors"
	"fmt"
)

// ErrUserFixable marks failures the user must fix (a wrong address, a
// missing package, a port in use); the rest are worth a retry as they are.
var ErrUserFixable = errors.New("user must fix")

// StepError is the failure of one step of an operation.
type StepError struct {
	Step  string
	Index int
	Err   error
}

func (e *StepError) Error() string { return fmt.Sprintf("step %s: %v", e.Step, e.Err) }

// Unwrap exposes the cause.
func (e *StepError) Unwrap() error { return e.Err }

// NodeError is a failure on one node.
type NodeError struct {
	Node string
	Err  error
	// Hint says what the user should do, when known.
	Hint string
}

func (e *NodeError) Error() string {
	if e.Hint != "" {
		return fmt.Sprintf("node %s: %v: %s", e.Node, e.Err, e.Hint)
	}
	return fmt.Sprintf("node %s: %v", e.Node, e.Err)
}

// Unwrap exposes the cause.
func (e *NodeError) Unwrap() error { return e.Err }

// UserFixable wraps err so that errors.Is(err, ErrUserFixable) holds.
func UserFixable(err error) error {
	if err == nil {
		return nil
	}
	return userFixable{err}
}

type userFixable struct{ err error }

func (u userFixable) Error() string   { return u.err.Error() }
func (u userFixable) Unwrap() []error { return []error{u.err, ErrUserFixable} }

// nodeOf returns the node of the first NodeError in err, if any.
func nodeOf(err error) string {
	var ne *NodeError
	if errors.As(err, &ne) {
		return ne.Node
	}
	return ""
}

// NodeOf returns the node a failure concerns ("" when it is not about one
// node).
func NodeOf(err error) string { return nodeOf(err) }
