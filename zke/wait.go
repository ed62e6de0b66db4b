package zke

import "github.com/zdnscloud/singlecloud/zke/workflow"

// waitReporter is told what a bounded wait waits for: the running step's
// *workflow.Reporter, which shows it when the step stalls.
type waitReporter interface {
	Waiting(node, what string, lastErr error)
}

// waitOn says whom a bounded wait (poll, a pull, an import) tells what it
// waits for: the running step's reporter, handed down as a parameter
// from the step (nil tells nobody, as in tests), and the node the wait
// concerns ("" for the whole cluster). hint, when set, says what to do
// about the last failure; it is shown with the stall, never added to the
// wait's own error.
type waitOn struct {
	rep  waitReporter
	node string
	hint func(err error) string
}

// waiting tells the reporter that the wait waits for what, having last
// failed with lastErr (nil: no failure yet).
func (w waitOn) waiting(what string, lastErr error) {
	if w.rep == nil {
		return
	}
	if lastErr != nil && w.hint != nil {
		if h := w.hint(lastErr); h != "" {
			lastErr = &workflow.NodeError{Node: w.node, Err: lastErr, Hint: h}
		}
	}
	w.rep.Waiting(w.node, what, lastErr)
}

// done tells the reporter that the wait has ended.
func (w waitOn) done() {
	if w.rep != nil {
		w.rep.Waiting(w.node, "", nil)
	}
}
