package clustermanager

import "time"

// Observer learns what the manager does, for metrics: operations as they
// start and end, installer steps as they finish, health probes as they
// return. Its methods are called on the manager's workers and must return
// quickly. Every string is from a fixed set (operation types, outcomes,
// installer step names), never a cluster's name.
type Observer interface {
	// OperationStarted: a run of an operation of kind is queued (a run
	// resumed after a restart included).
	OperationStarted(kind string)
	// OperationEnded: an operation of kind ended with outcome (succeeded,
	// failed, canceled) after d; d < 0 when its duration is unknown.
	OperationEnded(kind, outcome string, d time.Duration)
	// StepEnded: installer step of an operation of kind finished after d.
	StepEnded(kind, step string, d time.Duration)
	// ProbeDone: a health probe of a ready cluster returned after d, with
	// err when it failed.
	ProbeDone(d time.Duration, err error)
}

// noObserver is the Observer of Options without one.
type noObserver struct{}

func (noObserver) OperationStarted(string)                      {}
func (noObserver) OperationEnded(string, string, time.Duration) {}
func (noObserver) StepEnded(string, string, time.Duration)      {}
func (noObserver) ProbeDone(time.Duration, error)               {}
