package clustermanager

import (
	"context"
	"fmt"
	"sync"

	"github.com/zdnscloud/singlecloud/fsm"
	kubecfg "github.com/zdnscloud/singlecloud/internal/kubeconfig"
)

// opKind is one row of the operation table: which events start an
// operation and end it, how its failure is told, and the function that
// runs it on the cluster's worker. Adding an operation is one row here and
// one run function; queueing, cancel, logging, persistence, history and
// the result frame are the same for all (start, finish).
type opKind struct {
	typ OperationType
	// start lists the events that begin it from a settled state (or
	// from New).
	start     []fsm.Event
	succeeded fsm.Event
	failed    fsm.Event
	// canceled ends it after a cancel (Canceling → …); "" when it cannot
	// be cancelled (the state machine refuses cancel while it runs).
	canceled fsm.Event
	// logged operations keep an operation log (the zkelog); connects of
	// imported clusters do not, so that a restart reconnecting thousands
	// of them writes nothing.
	logged bool
	// failure turns the run's error into the cluster's reason and the
	// operation's error.
	failure func(err error) (reason string, oe *OperationError)
	run     func(m *Manager, ctx context.Context, e *entry, r *opRun) outcome
}

// opRun is one run of an operation kind on one cluster.
type opRun struct {
	kind  *opKind
	log   *opLog
	logID uint64 // the run's number in log: frames of others are dropped
	// fresh is false when the run resumes an interrupted one: the
	// installer's checkpoints and the log are kept.
	fresh bool
	force bool // delete: skip hosts that cannot be reached
}

// outcome is what a run ends with. edit records what the run learnt (the
// installer's state, the version): it is saved with the outcome's
// transition, or on its own when the run was interrupted.
type outcome struct {
	err  error
	edit func(r *record)
}

// operationTable is the table. It is built once and never changed.
var operationTable = sync.OnceValue(func() map[OperationType]*opKind {
	install := func(typ OperationType) func(err error) (string, *OperationError) {
		return func(err error) (string, *OperationError) {
			return fmt.Sprintf("%s failed: %v", typ, err), operationError(err)
		}
	}
	connectFailure := func(err error) (string, *OperationError) {
		reason := kubecfg.RedactText(err.Error())
		return reason, &OperationError{Step: "connect", Message: reason, UserFixable: true}
	}
	rows := []*opKind{
		{typ: OpCreate, start: []fsm.Event{fsm.EventCreate, fsm.EventResume},
			succeeded: fsm.EventCreateSucceeded, failed: fsm.EventCreateFailed, canceled: fsm.EventCanceled, logged: true,
			failure: install(OpCreate), run: (*Manager).runInstall},
		{typ: OpUpdate, start: []fsm.Event{fsm.EventUpdate},
			succeeded: fsm.EventUpdateSucceeded, failed: fsm.EventUpdateFailed, canceled: fsm.EventCanceled, logged: true,
			failure: install(OpUpdate), run: (*Manager).runInstall},
		{typ: OpRotateCertificates, start: []fsm.Event{fsm.EventRotateCertificates},
			succeeded: fsm.EventUpdateSucceeded, failed: fsm.EventUpdateFailed, canceled: fsm.EventCanceled, logged: true,
			failure: install(OpRotateCertificates), run: (*Manager).runInstall},
		{typ: OpUpgrade, start: []fsm.Event{fsm.EventUpdate},
			succeeded: fsm.EventUpdateSucceeded, failed: fsm.EventUpdateFailed, canceled: fsm.EventCanceled, logged: true,
			failure: install(OpUpgrade), run: (*Manager).runInstall},
		{typ: OpRestore, start: []fsm.Event{fsm.EventRestore},
			succeeded: fsm.EventUpdateSucceeded, failed: fsm.EventUpdateFailed, canceled: fsm.EventCanceled, logged: true,
			failure: install(OpRestore), run: (*Manager).runInstall},
		{typ: OpImport, start: []fsm.Event{fsm.EventImport},
			succeeded: fsm.EventConnectSucceeded, failed: fsm.EventConnectFailed, canceled: fsm.EventCanceled,
			failure: connectFailure, run: (*Manager).runConnect},
		{typ: OpConnect, start: []fsm.Event{fsm.EventReconnect},
			succeeded: fsm.EventConnectSucceeded, failed: fsm.EventConnectFailed, canceled: fsm.EventCanceled,
			failure: connectFailure, run: (*Manager).runConnect},
		{typ: OpDelete, start: []fsm.Event{fsm.EventDelete},
			succeeded: fsm.EventDeleted, failed: fsm.EventDeleteFailed, logged: true,
			failure: func(err error) (string, *OperationError) {
				return fmt.Sprintf("delete failed: %v; retry the delete, or delete with ?force=true to skip hosts that cannot be reached", err), operationError(err)
			},
			run: (*Manager).runDelete},
	}
	table := make(map[OperationType]*opKind, len(rows))
	for _, k := range rows {
		table[k.typ] = k
	}
	return table
})

// opKindOf returns typ's row.
func opKindOf(typ OperationType) (*opKind, error) {
	k, ok := operationTable()[typ]
	if !ok {
		return nil, fmt.Errorf("unknown operation %q", typ)
	}
	return k, nil
}

// runsIn reports whether a run of k belongs in state s: s is where one of
// k's start events leads. A run queued behind its start finds another
// state when a cancel or delete got in between, and then does not run.
func (k *opKind) runsIn(s fsm.State) bool {
	for _, r := range fsm.Transitions() {
		if r.Dst == s && k.starts(r.Event) {
			return true
		}
	}
	return false
}

// starts reports whether ev is one of k's start events.
func (k *opKind) starts(ev fsm.Event) bool {
	for _, s := range k.start {
		if s == ev {
			return true
		}
	}
	return false
}
