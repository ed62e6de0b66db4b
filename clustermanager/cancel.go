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
	rec := e.record()
	if !e.machine.Can(fsm.EventCancel) || !rec.LastOperation.running() {
		return Cluster{}, &fsm.TransitionError{Cluster: name, Event: fsm.EventCancel, State: e.machine.Current()}
	}
	k, err := opKindOf(rec.LastOperation.Type)
	if err != nil {
		return Cluster{}, err
	}
	if k.canceled == "" {
		return Cluster{}, &fsm.TransitionError{Cluster: name, Event: fsm.EventCancel, State: e.machine.Current()}
	}
	if err := e.machine.Fire(ctx, fsm.EventCancel, nil); err != nil {
		return Cluster{}, err
	}
	v := m.view(e)
	m.queue.interrupt(name)
	r := &opRun{kind: k}
	if k.logged {
		r.log = m.oplogFor(e)
		r.logID = r.log.current()
	}
	if _, err := m.queue.add(name, "settle cancel", false, func(context.Context) { m.settleCancel(e, r) }); err != nil {
		m.log.Error("cancel: the outcome was not queued; the cluster is reloaded as Unavailable at the next start", "cluster", name, "err", err)
	}
	return v, nil
}
