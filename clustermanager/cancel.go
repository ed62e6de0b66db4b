package clustermanager

import (
	"context"

	"github.com/zdnscloud/singlecloud/fsm"
)

// Cancel stops the cluster's running operation. The cluster is Canceling
// when Cancel returns and becomes Unavailable only once the operation has
// really stopped, with what it had done saved: Cancel cancels the worker's
// running item and queues the operation's settled outcome behind it.
// Like Delete, it interrupts: the cancel transition is fired here, not on
// the busy worker.
func (m *Manager) Cancel(ctx context.Context, name string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if err := m.refuse(e, ActionCancel); err != nil {
		return Cluster{}, err
	}
	run := e.currentRun()
	if run == nil || run.kind.canceled == "" {
		// Between an operation's end and its transition, or a kind
		// that cannot be cancelled: the state refuses as it will.
		return Cluster{}, &fsm.TransitionError{Cluster: name, Event: fsm.EventCancel, State: e.machine.Current()}
	}
	k := run.kind
	if err := e.machine.Fire(ctx, fsm.EventCancel, nil); err != nil {
		return Cluster{}, err
	}
	// The run that the cancel stops: the one on the worker now (an
	// operation that ended and another that began between the check and
	// the transition would be this one's), else the one seen before.
	if now := e.currentRun(); now != nil && now.kind.canceled != "" {
		run, k = now, now.kind
	}
	v := m.view(e)
	m.queue.interrupt(name)
	r := &opRun{kind: k, log: run.log, logID: run.logID}
	if _, err := m.queue.add(name, "settle cancel", false, func(context.Context) { m.settleCancel(e, r) }); err != nil {
		m.log.Error("cancel: the outcome was not queued; the cluster is reloaded as Unavailable at the next start", "cluster", name, "err", err)
	}
	return v, nil
}
