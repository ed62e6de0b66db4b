package clustermanager

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/zke"
)

// Delete moves the cluster to Deleting (saved before Delete returns), then
// in the background stops its running operation and removes it: an
// imported cluster is only forgotten, never touched; a created one has
// zke's containers and directories removed from every host first. With
// force, hosts that cannot be reached are reported and skipped.
func (m *Manager) Delete(ctx context.Context, name string, force bool) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	now := m.opts.Clock().UTC()
	err = e.machine.Fire(ctx, fsm.EventDelete, change(func(r *record) {
		r.Reason = ""
		r.LastOperation = &Operation{Type: OpDelete, State: OpRunning, Step: "delete", Index: 1, Total: 1, StartedAt: now}
	}))
	if err != nil {
		return Cluster{}, err
	}
	v := m.view(e)
	m.finishDelete(e, force, true)
	return v, nil
}

// finishDelete stops whatever e was doing (the new operation supersedes
// it), cleans its hosts if zke made it, then removes it. Also used by reload for a delete that a restart
// interrupted (fresh false keeps that delete's log).
func (m *Manager) finishDelete(e *entry, force, fresh bool) {
	created := e.record().Kind == KindCreated
	var logOp uint64
	if created {
		// The previous operation's late frames are dropped from now on.
		var err error
		if logOp, err = m.oplogFor(e).begin(fresh); err != nil {
			m.log.Warn("operation log not cleared", "cluster", e.name, "err", err)
		}
	}
	m.startOp(e, OpDelete, func(ctx context.Context) {
		if created {
			if err := m.removeHosts(ctx, e, force, logOp); err != nil {
				if ctx.Err() != nil {
					return // shutdown: the delete resumes at the next start
				}
				m.failDelete(e, err, logOp)
				return
			}
		}
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if err := e.machine.Fire(cctx, fsm.EventDeleted, change(nil)); err != nil {
			m.log.Error("delete cluster: could not remove its row; it stays Deleting and the delete resumes at the next start", "cluster", e.name, "err", err)
			return
		}
		if created {
			m.oplogFor(e).append(logOp, Frame{Type: FrameResult, Status: string(fsm.StateDeleted), Message: "delete succeeded"})
		}
	})
}

// removeHosts runs the installer's Remove for a created cluster.
func (m *Manager) removeHosts(ctx context.Context, e *entry, force bool, op uint64) error {
	log := m.oplogFor(e)
	defer log.flushWhile()()

	rec := e.record()
	if m.opts.Installer == nil || rec.Config == nil {
		return fmt.Errorf("cluster %s: %w", e.name, ErrNoInstaller)
	}
	cfg := rec.fullConfig()
	var prev zke.State
	if rec.secrets.ZKE != nil {
		prev = rec.secrets.ZKE.Clone()
	}
	return m.opts.Installer.Remove(ctx, cfg, prev, &installSink{m: m, e: e, log: log, op: op, kind: OpDelete}, force)
}

func (m *Manager) failDelete(e *entry, cause error, op uint64) {
	now := m.opts.Clock().UTC()
	oe := operationError(cause)
	err := e.machine.Fire(m.root, fsm.EventDeleteFailed, change(func(r *record) {
		r.Reason = fmt.Sprintf("delete failed: %v; retry the delete, or delete with ?force=true to skip hosts that cannot be reached", cause)
		if r.LastOperation != nil {
			r.LastOperation.finish(now, OpFailed, oe)
		}
	}))
	if err != nil {
		m.log.Error("delete failed and the failure was not saved", "cluster", e.name, "err", err)
		return
	}
	log := m.oplogFor(e)
	log.append(op, Frame{Type: FrameResult, Level: "error", Status: string(fsm.StateUnavailable), Node: oe.Node, Message: cause.Error()})
	_ = log.flush()
}
