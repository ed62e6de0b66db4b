package clustermanager

import (
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// OperationType names a long operation on a cluster: a row of the
// operation table (optable.go).
type OperationType string

// The operation types.
const (
	OpImport  OperationType = "import"
	OpConnect OperationType = "connect"
	OpCreate  OperationType = "create"
	OpUpdate  OperationType = "update"
	OpDelete  OperationType = "delete"
	// OpRotateCertificates reissues a created cluster's leaf
	// certificates and restarts its components on them.
	OpRotateCertificates OperationType = "rotateCertificates"
	// OpRestore puts a created cluster's etcd back to a snapshot.
	OpRestore OperationType = "restore"
	// OpUpgrade moves a created cluster to another Kubernetes version,
	// node by node (a revert is one, back to the version it ran).
	OpUpgrade OperationType = "upgrade"
)

// OperationState is where an operation is in its life.
type OperationState string

// The operation states.
const (
	OpRunning   OperationState = "running"
	OpSucceeded OperationState = "succeeded"
	OpFailed    OperationState = "failed"
	OpCanceled  OperationState = "canceled"
)

// OperationError is the last error of an operation: what failed, where, and
// whether fixing it is the user's job (a bad kubeconfig) or not (a crash).
type OperationError struct {
	Step        string `json:"step,omitempty"`
	Node        string `json:"node,omitempty"`
	Message     string `json:"message"`
	UserFixable bool   `json:"userFixable"`
}

// StepTiming is how one finished step of an operation went.
type StepTiming struct {
	Name    string  `json:"name"`
	Index   int     `json:"index"`
	Seconds float64 `json:"seconds"`
	// Skipped marks a step that a resumed run did not redo: an earlier
	// run finished it with the same inputs and it was verified in place.
	Skipped bool `json:"skipped,omitempty"`
}

// Operation is a cluster's last-operation record (SPEC §2), and one entry
// of its operation history once it has ended.
type Operation struct {
	Type      OperationType   `json:"type"`
	State     OperationState  `json:"state"`
	Step      string          `json:"step,omitempty"`
	Index     int             `json:"index,omitempty"`
	Total     int             `json:"total,omitempty"`
	Percent   int             `json:"percent"`
	StartedAt time.Time       `json:"startedAt"`
	EndedAt   *time.Time      `json:"endedAt,omitempty"`
	Error     *OperationError `json:"error,omitempty"`
	// StartedBy is the user who started it ("" when singlecloud did, at
	// a restart).
	StartedBy string `json:"startedBy,omitempty"`
	// Steps are the finished steps, in order, with their durations.
	Steps []StepTiming `json:"steps,omitempty"`
	// ETA is the estimated number of seconds left, learnt from earlier
	// operations' step durations; absent when there is nothing to learn
	// from yet.
	ETA *int `json:"eta,omitempty"`
	// Stalled is set while the running step is past its deadline: what
	// it waits for, on which node, and its last error.
	Stalled *workflow.Stall `json:"stalled,omitempty"`
}

// finish marks op ended at t in state s, with an optional error.
func (op *Operation) finish(t time.Time, s OperationState, e *OperationError) {
	op.State = s
	op.EndedAt = &t
	op.Error = e
	op.ETA = nil
	if s == OpSucceeded {
		op.Percent = 100
		op.Stalled = nil
	}
}

// running reports whether op is an operation still running.
func (op *Operation) running() bool { return op != nil && op.State == OpRunning }

// interruptedBy is the running op as it ends when an operation of type by
// replaces it (a delete of a busy cluster): canceled, saying by what.
func (op *Operation) interruptedBy(by OperationType, now time.Time) *Operation {
	ended := op.clone()
	ended.finish(now, OpCanceled, &OperationError{Step: op.Step, Message: fmt.Sprintf("%s interrupted by a %s", op.Type, by)})
	return ended
}

// clone copies op deeply enough to edit.
func (op *Operation) clone() *Operation {
	if op == nil {
		return nil
	}
	c := *op
	c.Steps = append([]StepTiming(nil), op.Steps...)
	if op.ETA != nil {
		eta := *op.ETA
		c.ETA = &eta
	}
	if op.Stalled != nil {
		s := *op.Stalled
		c.Stalled = &s
	}
	return &c
}
