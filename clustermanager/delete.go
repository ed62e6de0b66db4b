package clustermanager

import (
	"context"

	"github.com/zdnscloud/singlecloud/fsm"
)

// Delete moves the cluster to Deleting (saved before Delete returns), then
// in the background stops its running operation and forgets it: an
// imported cluster is only forgotten, never touched.
func (m *Manager) Delete(ctx context.Context, name string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	now := m.opts.Clock().UTC()
	err = e.machine.Fire(ctx, fsm.EventDelete, change(func(r *record) {
		r.LastOperation = &Operation{Type: OpDelete, State: OpRunning, Step: "delete", Index: 1, Total: 1, StartedAt: now}
	}))
	if err != nil {
		return Cluster{}, err
	}
	v := m.view(e)
	m.finishDelete(e)
	return v, nil
}

// finishDelete stops whatever e was doing, then removes it. Also used by
// reload for a delete that a restart interrupted.
func (m *Manager) finishDelete(e *entry) {
	stopped := e.stopOp()
	m.startOp(e, OpDelete, func(ctx context.Context) {
		<-stopped
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if err := e.machine.Fire(cctx, fsm.EventDeleted, change(nil)); err != nil {
			m.log.Error("delete cluster: could not remove its row; it stays Deleting and the delete resumes at the next start", "cluster", e.name, "err", err)
		}
	})
}
