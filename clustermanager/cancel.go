package clustermanager

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
)

// Cancel stops the cluster's running operation. The cluster is Canceling
// when Cancel returns and becomes Unavailable only once the operation has
// really stopped, with what it had done saved.
func (m *Manager) Cancel(ctx context.Context, name string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	from := e.machine.Current()
	if err := e.machine.Fire(ctx, fsm.EventCancel, change(nil)); err != nil {
		return Cluster{}, err
	}
	v := m.view(e)
	logOp := m.oplogFor(e).current()
	stopped := e.stopOp()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		<-stopped
		cctx, cancel := cleanupContext(m.root)
		defer cancel()
		now := m.opts.Clock().UTC()
		reason := fmt.Sprintf("%s canceled by an administrator", opName(from))
		err := e.machine.Fire(cctx, fsm.EventCanceled, change(func(r *record) {
			r.Reason = reason
			if r.LastOperation != nil && r.LastOperation.State == OpRunning {
				r.LastOperation.finish(now, OpCanceled, &OperationError{Step: r.LastOperation.Step, Message: reason, UserFixable: false})
			}
		}))
		if err != nil {
			m.log.Error("cancel: could not save Unavailable; the cluster is reloaded as Unavailable at the next start", "cluster", e.name, "err", err)
			return
		}
		if from == fsm.StateCreating || from == fsm.StateUpdating {
			log := m.oplogFor(e)
			log.append(logOp, Frame{Type: FrameResult, Level: "warn", Status: string(fsm.StateUnavailable), Message: reason})
			_ = log.flush()
		}
	}()
	return v, nil
}

func opName(s fsm.State) string {
	switch s {
	case fsm.StateCreating:
		return "create"
	case fsm.StateUpdating:
		return "update"
	default:
		return "connect"
	}
}
