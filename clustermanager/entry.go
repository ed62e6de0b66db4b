package clustermanager

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/fsm"
)

// entry is one cluster in memory: its state machine, its last persisted
// record, its live client and its running operation. The record is replaced
// only by the fsm hooks after a successful write, so memory never runs ahead
// of disk.
type entry struct {
	name    string
	machine *fsm.Machine

	mu       sync.Mutex
	rec      *record
	client   kubernetes.Interface
	op       *runningOp
	failures int       // consecutive failed health probes
	nextAt   time.Time // when the health loop probes next
	lastErr  string    // last transient connect or probe error, for the view
	rev      uint64    // bumped whenever rec or lastErr changes
	oplog    *opLog    // the current or last operation's log; nil until used

	// writeMu serialises every read-modify-write of the record: the fsm
	// hooks' and the installer's checkpoints.
	writeMu sync.Mutex
}

// runningOp is an operation's goroutine: cancel asks it to stop, done is
// closed when it has (or when it was abandoned before it began).
type runningOp struct {
	kind   OperationType
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	prev   *runningOp // the operation it supersedes, until it has begun
}

func (e *entry) record() *record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec
}

func (e *entry) setRecord(r *record) {
	e.mu.Lock()
	e.rec = r
	e.rev++
	e.mu.Unlock()
}

func (e *entry) clientSnapshot() kubernetes.Interface {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client
}

func (e *entry) setClient(c kubernetes.Interface) {
	e.mu.Lock()
	e.client = c
	e.mu.Unlock()
}

func (e *entry) setLastErr(msg string) {
	e.mu.Lock()
	if e.lastErr != msg {
		e.lastErr = msg
		e.rev++
	}
	e.mu.Unlock()
}

// stopOp cancels the running operation, if any, and returns a channel closed
// once it has stopped.
func (e *entry) stopOp() <-chan struct{} {
	e.mu.Lock()
	op := e.op
	e.mu.Unlock()
	if op == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	op.cancel()
	return op.done
}
