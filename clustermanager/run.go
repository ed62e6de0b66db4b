package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/wait"
)

// start fires ev, one of typ's start events, on e's worker, with edit
// applied to the record and a new running last operation, and queues typ's
// run behind it. A state that refuses ev answers at once, without waiting
// for the worker: a busy cluster refuses every start event. It returns the
// cluster as the start left it, before the run could move it on.
func (m *Manager) start(ctx context.Context, e *entry, typ OperationType, ev fsm.Event, edit change, fresh, force bool) (Cluster, error) {
	k, err := opKindOf(typ)
	if err != nil {
		return Cluster{}, err
	}
	if !k.starts(ev) {
		return Cluster{}, fmt.Errorf("event %s does not start a %s", ev, typ)
	}
	if !e.machine.Can(ev) {
		return Cluster{}, &fsm.TransitionError{Cluster: e.name, Event: ev, State: e.machine.Current()}
	}
	var started Cluster
	err = m.queue.do(ctx, e.name, string(ev), func(ictx context.Context) error {
		if ictx.Err() != nil {
			return fmt.Errorf("%s cluster %s: %w", ev, e.name, errShuttingDown)
		}
		if err := e.machine.Fire(ctx, ev, m.startChange(ctx, typ, edit)); err != nil {
			return err
		}
		started = m.view(e)
		if err := m.enqueueRun(e, k, fresh, force, false); err != nil {
			// Saved: the operation resumes at the next start.
			m.log.Warn("operation saved but not started; it resumes at the next start", "cluster", e.name, "operation", string(typ), "err", err)
		}
		return nil
	})
	return started, err
}

// startChange is the record edit of a start event: a new running last
// operation of typ, started by the request's user, and the caller's edit.
func (m *Manager) startChange(ctx context.Context, typ OperationType, edit change) change {
	by := ActorFrom(ctx)
	now := m.opts.Clock().UTC()
	return func(r *record) {
		r.Reason = ""
		r.LastOperation = &Operation{Type: typ, State: OpRunning, StartedAt: now, StartedBy: by}
		if edit != nil {
			edit(r)
		}
	}
}

// enqueueRun queues a run of k on e's worker. The run's log is begun now,
// so that a follower who comes right after sees the operation running.
// resumed says that the run carries on after a restart.
func (m *Manager) enqueueRun(e *entry, k *opKind, fresh, force, resumed bool) error {
	r := &opRun{kind: k, fresh: fresh, force: force}
	if k.logged {
		r.log = m.oplogFor(e)
		var err error
		if r.logID, err = r.log.begin(fresh); err != nil {
			m.log.Warn("operation log not cleared", "cluster", e.name, "err", err)
		}
	}
	e.setRun(r)
	m.logStarted(e, k, resumed)
	_, err := m.queue.add(e.name, string(k.typ), true, func(ctx context.Context) {
		defer e.clearRun(r)
		if !k.runsIn(e.machine.Current()) {
			// A cancel or delete got in between the start and this run.
			ended, cancel := context.WithCancel(ctx)
			cancel()
			m.finish(ended, e, r, outcome{})
			return
		}
		// The log is flushed while the run runs and once after; finish
		// flushes what it adds, unless the cluster's rows are gone.
		out := func() outcome {
			if r.log != nil {
				defer r.log.flushWhile()()
			}
			return k.run(m, ctx, e, r)
		}()
		m.finish(ctx, e, r, out)
	})
	return err
}

// finish ends a run with its outcome: the success or failure event of its
// kind, fired with what the run learnt. A run whose context ended was
// interrupted (cancel, delete or shutdown): what it learnt is kept for the
// retry and whoever interrupted it moves the state.
func (m *Manager) finish(ctx context.Context, e *entry, r *opRun, out outcome) {
	if ctx.Err() != nil {
		if out.edit != nil {
			err := m.repo.edit(e, func(next *record) bool { out.edit(next); return true })
			if err != nil {
				m.log.Warn("state of an interrupted operation not saved", "cluster", e.name, "operation", string(r.kind.typ), "err", err)
			}
		}
		if r.log != nil {
			r.log.append(r.logID, Frame{Type: FrameLog, Level: "warn", Message: "operation canceled"})
			_ = r.log.flush()
		}
		return
	}
	if out.err == nil {
		m.conclude(e, r, r.kind.succeeded, OpSucceeded, "", nil, out.edit)
		return
	}
	reason, oe := r.kind.failure(out.err)
	m.conclude(e, r, r.kind.failed, OpFailed, reason, oe, out.edit)
}

// settleCancel ends a cancelled run, once it has stopped: Canceling →
// Unavailable with the reason. Cancel queues it behind the run.
func (m *Manager) settleCancel(e *entry, r *opRun) {
	reason := fmt.Sprintf("%s canceled by an administrator", r.kind.typ)
	m.conclude(e, r, r.kind.canceled, OpCanceled, reason, &OperationError{Message: reason}, nil)
}

// defaultConcludeRetry is the pause before an outcome the store refused is
// written again.
const defaultConcludeRetry = 5 * time.Second

// retryConclude queues conclude again after m.concludeRetry; a shutdown
// meanwhile leaves the state to reload, which maps it.
func (m *Manager) retryConclude(e *entry, r *opRun, ev fsm.Event, state OperationState, reason string, oe *OperationError, edit func(*record)) {
	_, err := m.queue.add(e.name, "retry "+string(ev), false, func(ctx context.Context) {
		if !wait.Sleep(ctx, m.concludeRetry) {
			return
		}
		if oe != nil {
			c := *oe
			oe = &c
		}
		m.conclude(e, r, ev, state, reason, oe, edit)
	})
	if err != nil {
		m.log.Warn("outcome not saved; the cluster is reloaded at the next start", "cluster", e.name, "err", err)
	}
}

// conclude is the one way an operation ends: it fires ev with edit, the
// reason and the ended last operation; resets the health counters of a
// cluster that became ready; appends the result frame and flushes the log.
// The cluster's announcements wait until the result frame is in the log,
// so a client that hears the outcome finds it in the log too.
func (m *Manager) conclude(e *entry, r *opRun, ev fsm.Event, state OperationState, reason string, oe *OperationError, edit func(*record)) {
	release := e.hold(m.opts.Bus)
	defer release()
	now := m.opts.Clock().UTC()
	ctx, cancel := cleanupContext(m.root)
	defer cancel()
	var ended *Operation
	err := e.machine.Fire(ctx, ev, func(rec *record) {
		if edit != nil {
			edit(rec)
		}
		if reason != "" {
			rec.Reason = reason
		}
		if op := rec.LastOperation; op.running() {
			if oe != nil && oe.Step == "" {
				oe.Step = op.Step
			}
			op.finish(now, state, oe)
			ended = op.clone()
		}
	})
	if err != nil {
		m.log.Error("operation ended but its outcome was not saved", "cluster", e.name, "operation", string(r.kind.typ), "outcome", string(state), "err", err)
		if errors.Is(err, fsm.ErrInvalidTransition) {
			// Cancelled or deleted at the last moment: keep what the
			// run learnt; the interrupter moves the state.
			if edit != nil {
				_ = m.repo.edit(e, func(next *record) bool { edit(next); return true })
			}
			return
		}
		// The store refused the write: try again, on the worker, so the
		// cluster never rests in a busy state with nothing to move it.
		m.retryConclude(e, r, ev, state, reason, oe, edit)
		return
	}
	cur := e.machine.Current()
	if state == OpSucceeded && cur.Ready() {
		e.mu.Lock()
		e.failures, e.nextAt = 0, now.Add(m.opts.HealthInterval)
		e.mu.Unlock()
		// New certificates (create, update) or a new kubeconfig.
		m.checkCertificates(e, false)
	}
	if cur == fsm.StateDeleted {
		m.deleteSnapshots(e.name)
	}
	if ended == nil && ev == r.kind.succeeded && cur == fsm.StateDeleted {
		// The rows are gone with the edit: log what it would have saved.
		if op := e.record().LastOperation; op.running() {
			ended = op.clone()
			ended.finish(now, state, oe)
		}
	}
	m.logEnded(e, r.kind, state, ended)
	if ended != nil {
		m.eta.learn(m.opts.Store, ended, e.record().NodeCount)
	}
	if r.log == nil {
		return
	}
	f := Frame{Type: FrameResult, Status: string(cur), Message: string(r.kind.typ) + " succeeded"}
	if oe != nil {
		f.Level, f.Step, f.Node, f.Message = "error", oe.Step, oe.Node, oe.Message
		if state == OpCanceled {
			f.Level = "warn"
		}
	}
	r.log.append(r.logID, f)
	if cur != fsm.StateDeleted {
		_ = r.log.flush()
	}
}
