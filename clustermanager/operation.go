package clustermanager

import "time"

// OperationType names a long operation on a cluster.
type OperationType string

// The operation types.
const (
	OpImport  OperationType = "import"
	OpConnect OperationType = "connect"
	OpCreate  OperationType = "create"
	OpUpdate  OperationType = "update"
	OpDelete  OperationType = "delete"
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

// Operation is a cluster's last-operation record (SPEC §2).
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
}

// finish marks op ended at t in state s, with an optional error.
func (op *Operation) finish(t time.Time, s OperationState, e *OperationError) {
	op.State = s
	op.EndedAt = &t
	op.Error = e
	if s == OpSucceeded {
		op.Percent = 100
	}
}
