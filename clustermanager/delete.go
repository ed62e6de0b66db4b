package clustermanager

import (
	"context"

	"github.com/zdnscloud/singlecloud/fsm"
)

// Delete moves the cluster to Deleting (saved before Delete returns), then
// in the background stops its running operation and removes it: an
// imported cluster is only forgotten, never touched; a created one has
// zke's containers and directories removed from every host first. With
// force, hosts that cannot be reached are reported and skipped.
//
// Delete interrupts: on a busy cluster it is fired here, not on the
// worker (which is running the operation it stops); the state machine and
// the repository serialise it with the worker's writes.
func (m *Manager) Delete(ctx context.Context, name string, force bool) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	e.cancelSnapshot()
	edit := func(r *record) { r.LastOperation.Step, r.LastOperation.Index, r.LastOperation.Total = "delete", 1, 1 }
	if !e.machine.Current().Busy() {
		return m.start(ctx, e, OpDelete, fsm.EventDelete, edit, true, force)
	}
	// The operation the delete interrupts is read from the record the
	// transition saves over, so that one that ended meanwhile (its
	// worker concluded first) is not taken for interrupted.
	var interrupted *Operation
	start := m.startChange(ctx, OpDelete, edit)
	if err := e.machine.Fire(ctx, fsm.EventDelete, change(func(r *record) {
		interrupted = nil
		if r.LastOperation.running() {
			interrupted = r.LastOperation.clone()
		}
		start(r)
	})); err != nil {
		return Cluster{}, err
	}
	// The interrupted run does not conclude (whoever interrupts moves
	// the state): its end is counted here, as its history row says.
	if interrupted != nil {
		if k, err := opKindOf(interrupted.Type); err == nil {
			m.logEnded(e, k, OpCanceled, interrupted.interruptedBy(OpDelete, m.opts.Clock().UTC()))
		}
	}
	v := m.view(e)
	m.queue.interrupt(name)
	k, _ := opKindOf(OpDelete)
	if err := m.enqueueRun(e, k, true, force, false); err != nil {
		m.log.Warn("delete not started; it resumes at the next start", "cluster", name, "err", err)
	}
	return v, nil
}
