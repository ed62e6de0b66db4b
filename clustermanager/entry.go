package clustermanager

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/pubsub"
)

// entry is one cluster in memory: its state machine, its last persisted
// record and its live client. The record is replaced only by the
// repository after a successful write, so memory never runs ahead of disk
// (reload is the one exception, see restore). The cluster's work runs on
// its worker of the manager's work queue.
type entry struct {
	name    string
	machine *fsm.Machine[change]

	mu       sync.Mutex
	rec      *record
	client   kubeclient.Interface
	failures int       // consecutive failed health probes
	nextAt   time.Time // when the health loop probes next
	lastErr  string    // last transient connect or probe error, for the view
	// dataPlane is what the last health probe found wrong with a
	// created cluster's data plane (dataPlaneProblem), "" when nothing:
	// the reason a Running cluster shows. It is not stored: the next
	// probe after a restart finds it again.
	dataPlane string
	// dataPlaneAt is when dataPlane was found: the view shows it only
	// when it is newer than the record (an operation since may have
	// repaired, or broken, what it says).
	dataPlaneAt time.Time
	rev         uint64 // bumped whenever rec, lastErr or dataPlane changes
	// views is the manager's generation of views (Manager.Generation),
	// bumped with rev.
	views *atomic.Uint64
	oplog *opLog    // the current or last operation's log; nil until used
	run   *opRun    // the operation queued or running on the worker; nil when none
	certs certCache // parsed certificates and the expiry warning
	// The snapshot schedule: when the newest snapshot was taken (read
	// from the snapshot store once, snapKnown) and when a failed
	// scheduled one may be tried again.
	snapKnown   bool
	snapLast    time.Time
	snapRetryAt time.Time
	// snapCancel ends the snapshot in flight; nil when none is.
	snapCancel context.CancelFunc

	// writeMu serialises every read-modify-write of the record: the
	// transitions' and the running operation's progress.
	writeMu sync.Mutex

	// pubMu orders the cluster's announcements. While an operation
	// finishes (held), they wait in held, so that the outcome is
	// published only once its result frame is in the log.
	pubMu sync.Mutex
	held  bool
	queue []pubsub.Event
}

// bumpLocked marks a change of e's view (under e.mu, after the change):
// its revision, and the manager's generation of views.
func (e *entry) bumpLocked() {
	e.rev++
	if e.views != nil {
		e.views.Add(1)
	}
}

func (e *entry) record() *record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rec
}

func (e *entry) setRecord(r *record) {
	e.mu.Lock()
	e.rec = r
	e.bumpLocked()
	e.mu.Unlock()
}

// currentRun returns the operation queued or running, or nil.
func (e *entry) currentRun() *opRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.run
}

// setRun records r as the operation queued or running; clearRun forgets
// it once it has ended (unless another has replaced it).
func (e *entry) setRun(r *opRun) {
	e.mu.Lock()
	e.run = r
	e.mu.Unlock()
}

func (e *entry) clearRun(r *opRun) {
	e.mu.Lock()
	if e.run == r {
		e.run = nil
	}
	e.mu.Unlock()
}

func (e *entry) clientSnapshot() kubeclient.Interface {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client
}

func (e *entry) setClient(c kubeclient.Interface) {
	e.mu.Lock()
	e.client = c
	e.mu.Unlock()
}

func (e *entry) setLastErr(msg string) {
	e.mu.Lock()
	if e.lastErr != msg {
		e.lastErr = msg
		e.bumpLocked()
	}
	e.mu.Unlock()
}

func (e *entry) setDataPlane(problem string, at time.Time) {
	e.mu.Lock()
	e.dataPlaneAt = at
	if e.dataPlane != problem {
		e.dataPlane = problem
		e.bumpLocked()
	}
	e.mu.Unlock()
}

// publish sends evs on bus now, or after the hold if one is in place.
func (e *entry) publish(bus *pubsub.Bus, evs ...pubsub.Event) {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	if e.held {
		e.queue = append(e.queue, evs...)
		return
	}
	for _, ev := range evs {
		bus.Publish(ev)
	}
}

// hold delays the cluster's announcements until the returned func is
// called, which publishes them in order.
func (e *entry) hold(bus *pubsub.Bus) (release func()) {
	e.pubMu.Lock()
	e.held = true
	e.pubMu.Unlock()
	return func() {
		e.pubMu.Lock()
		defer e.pubMu.Unlock()
		e.held = false
		for _, ev := range e.queue {
			bus.Publish(ev)
		}
		e.queue = nil
	}
}
