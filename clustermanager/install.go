package clustermanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Installer is what the manager needs of zke: create, update and remove
// clusters on their hosts. Each call blocks until done or ctx ends.
type Installer interface {
	Create(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error)
	Update(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error)
	Remove(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink, force bool) error
	// KubernetesVersions lists the releases Create can install.
	KubernetesVersions() []string
}

// ErrNoInstaller reports a create, update or delete of a created cluster on
// a manager built without an installer.
var ErrNoInstaller = errors.New("this singlecloud has no installer")

// installSink records an operation's progress: log lines and progress
// frames go to the operation log (and its followers); checkpoints save the
// installer's state and the finished steps, so a crash resumes from there.
type installSink struct {
	m    *Manager
	e    *entry
	log  *opLog
	op   uint64        // the operation's number in log
	kind OperationType // whose progress the record's last operation shows

	mu        sync.Mutex
	progress  workflow.Progress
	stepStart time.Time // when the running step began, for the server log
}

// Progress logs p and, when p starts a step, saves that step as the
// running one in the record's last operation: between two checkpoints the
// cluster then shows the step that is running, not the last one that
// finished.
func (s *installSink) Progress(p workflow.Progress) {
	s.mu.Lock()
	started := p.Step != s.progress.Step || p.Index != s.progress.Index
	s.progress = p
	if started {
		s.stepStart = s.m.opts.Clock()
	}
	s.mu.Unlock()
	if started {
		s.m.log.Info("operation step started", "cluster", s.e.name, "operation", string(s.kind), "step", p.Step, "index", p.Index, "total", p.Total, "node", p.Node)
		// Saved before the frame is logged: a follower who sees the
		// step start finds it in the cluster too.
		if err := s.m.saveRunningStep(s.e, s.kind, p); err != nil {
			s.m.log.Warn("running step not saved", "cluster", s.e.name, "step", p.Step, "err", err)
		}
	}
	s.log.append(s.op, progressFrame(p))
}

// saveRunningStep records p's step, index and percentage in e's running
// last operation of type kind; a finished or other operation is left
// alone. Only the cluster's record is written.
func (m *Manager) saveRunningStep(e *entry, kind OperationType, p workflow.Progress) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	cur := e.record()
	op := cur.LastOperation
	if op == nil || op.Type != kind || op.State != OpRunning || (op.Step == p.Step && op.Index == p.Index) {
		return nil
	}
	next := cur.clone()
	next.LastOperation.Step, next.LastOperation.Index, next.LastOperation.Total = p.Step, p.Index, p.Total
	next.LastOperation.Percent = max(next.LastOperation.Percent, p.Percent)
	return m.putRecordLocked(e, next, nil)
}

func (s *installSink) Log(l workflow.Line) { s.log.append(s.op, lineFrame(l)) }

// Checkpoint writes the installer state, the finished steps and the
// operation's progress in one transaction. It is not a state transition:
// the cluster stays in its state.
func (s *installSink) Checkpoint(ctx context.Context, step string, st zke.State) error {
	s.mu.Lock()
	p, began := s.progress, s.stepStart
	s.mu.Unlock()
	if step != "" {
		s.m.log.Info("operation step finished", "cluster", s.e.name, "operation", string(s.kind), "step", step, "duration", s.m.opts.Clock().Sub(began).Round(time.Millisecond).String())
	}
	if err := s.m.saveInstallState(s.e, st, func(r *record) {
		if op := r.LastOperation; op != nil && step != "" && op.Type == s.kind && op.State == OpRunning {
			op.Step, op.Index, op.Total, op.Percent = step, p.Index, p.Total, p.Percent
		}
	}); err != nil {
		return fmt.Errorf("checkpoint %s of cluster %s: %w", step, s.e.name, err)
	}
	_ = s.log.flush()
	return nil
}

// saveInstallState writes the installer's state (and whatever edit does)
// into e's record and the checkpoints bucket, in one transaction, under
// e's write lock: a transition saved meanwhile is never overwritten.
func (m *Manager) saveInstallState(e *entry, st zke.State, edit func(r *record)) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	return m.writeInstallStateLocked(e, st, edit)
}

// writeInstallStateLocked is saveInstallState for a caller that holds
// e.writeMu.
func (m *Manager) writeInstallStateLocked(e *entry, st zke.State, edit func(r *record)) error {
	next := e.record().clone()
	state := st.Clone()
	next.secrets.ZKE = &state
	if edit != nil {
		edit(next)
	}
	cp, err := json.Marshal(state.Checkpoints)
	if err != nil {
		return fmt.Errorf("encode checkpoints of %s: %w", e.name, err)
	}
	return m.putRecordLocked(e, next, func(tx storage.Tx) error {
		return tx.Put(storage.BucketCheckpoints, e.name, cp)
	})
}

// operationError turns an installer failure into the last-operation error.
func operationError(err error) *OperationError {
	oe := &OperationError{Message: err.Error(), UserFixable: errors.Is(err, workflow.ErrUserFixable)}
	var se *workflow.StepError
	if errors.As(err, &se) {
		oe.Step = se.Step
	}
	oe.Node = workflow.NodeOf(err)
	return oe
}

// oplogFor returns e's operation log, creating it on first use.
func (m *Manager) oplogFor(e *entry) *opLog {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.oplog == nil {
		e.oplog = newOpLog(m.opts.Store, e.name, m.opts.Clock)
		if err := e.oplog.restore(); err != nil {
			m.log.Warn("operation log not restored", "cluster", e.name, "err", err)
		}
	}
	return e.oplog
}

// fireInstall fires ev (whose payload is c) and, if the state moved,
// starts a create or update of a created cluster as e's operation. fresh
// is false when resuming (retry), so that the log of the interrupted run
// is kept and the new run appends to it.
func (m *Manager) fireInstall(ctx context.Context, e *entry, ev fsm.Event, c change, kind OperationType, fresh bool) error {
	op := m.prepareOp(e, kind)
	if err := e.machine.Fire(ctx, ev, c); err != nil {
		m.abandon(e, op)
		return err
	}
	m.launchInstall(e, op, kind, fresh)
	return nil
}

// launchInstall starts the log of an install and runs it as op.
func (m *Manager) launchInstall(e *entry, op *runningOp, kind OperationType, fresh bool) {
	id, err := m.oplogFor(e).begin(fresh)
	if err != nil {
		m.log.Warn("operation log not cleared", "cluster", e.name, "err", err)
	}
	m.launch(e, op, func(ctx context.Context) { m.runInstall(ctx, e, kind, fresh, id) })
}

// runInstall runs a create or update and fires the outcome. op is the
// operation's number in the cluster's log.
func (m *Manager) runInstall(ctx context.Context, e *entry, kind OperationType, fresh bool, op uint64) {
	log := m.oplogFor(e)
	defer log.flushWhile()()

	rec := e.record()
	if m.opts.Installer == nil || rec.Config == nil {
		m.failInstall(e, kind, fmt.Errorf("cluster %s: %w", e.name, ErrNoInstaller), nil, op)
		return
	}
	cfg := rec.fullConfig()
	var prev zke.State
	if rec.secrets.ZKE != nil {
		prev = rec.secrets.ZKE.Clone()
	}
	if fresh {
		prev.Checkpoints = nil
	}
	sink := &installSink{m: m, e: e, log: log, op: op, kind: kind}
	var (
		st  zke.State
		err error
	)
	if kind == OpCreate {
		st, err = m.opts.Installer.Create(ctx, cfg, prev, sink)
	} else {
		st, err = m.opts.Installer.Update(ctx, cfg, prev, sink)
	}
	if ctx.Err() != nil {
		// Cancelled or shutting down: keep what the run learnt (pinned
		// host keys, certificates) for the retry; the canceller moves
		// the state.
		if serr := m.saveInstallState(e, st, nil); serr != nil {
			m.log.Warn("state of a cancelled install not saved", "cluster", e.name, "err", serr)
		}
		log.append(op, Frame{Type: FrameLog, Level: "warn", Message: "operation canceled"})
		return
	}
	if err != nil {
		m.failInstall(e, kind, err, &st, op)
		return
	}
	m.succeedInstall(ctx, e, kind, st, op)
}

func (m *Manager) succeedInstall(ctx context.Context, e *entry, kind OperationType, st zke.State, op uint64) {
	res, err := dialKubeconfig(ctx, st.Kubeconfig, m.opts.ProbeTimeout)
	if ctx.Err() != nil {
		_ = m.saveInstallState(e, st, nil)
		return // cancelled at the last moment: the canceller moves the state
	}
	if err != nil {
		m.failInstall(e, kind, fmt.Errorf("the cluster was installed but its API server does not answer with the new kubeconfig: %w", err), &st, op)
		return
	}
	e.setClient(res.client)
	now := m.opts.Clock().UTC()
	ev := fsm.EventCreateSucceeded
	if kind == OpUpdate {
		ev = fsm.EventUpdateSucceeded
	}
	err = e.machine.Fire(m.root, ev, change(func(r *record) {
		state := st.Clone()
		state.Checkpoints = nil
		r.secrets.ZKE = &state
		r.secrets.Kubeconfig = append([]byte(nil), st.Kubeconfig...)
		r.Version, r.NodeCount, r.Reason = res.version, res.nodes, ""
		if r.LastOperation != nil {
			r.LastOperation.finish(now, OpSucceeded, nil)
		}
	}))
	if err != nil {
		m.log.Error("install succeeded but the cluster's state was not saved", "cluster", e.name, "err", err)
		return
	}
	e.mu.Lock()
	e.failures, e.nextAt = 0, now.Add(m.opts.HealthInterval)
	e.mu.Unlock()
	m.oplogFor(e).append(op, Frame{Type: FrameResult, Status: string(fsm.StateRunning), Message: string(kind) + " succeeded"})
}

// failInstall fires the failure of an install, keeping the state the run
// reached (st, when the installer returned one) for the retry.
func (m *Manager) failInstall(e *entry, kind OperationType, cause error, st *zke.State, op uint64) {
	now := m.opts.Clock().UTC()
	ev := fsm.EventCreateFailed
	if kind == OpUpdate {
		ev = fsm.EventUpdateFailed
	}
	oe := operationError(cause)
	err := e.machine.Fire(m.root, ev, change(func(r *record) {
		r.Reason = fmt.Sprintf("%s failed: %v", kind, cause)
		if st != nil {
			state := st.Clone()
			r.secrets.ZKE = &state
		}
		if r.LastOperation != nil {
			r.LastOperation.finish(now, OpFailed, oe)
		}
	}))
	if err != nil {
		m.log.Error("install failed and the failure was not saved", "cluster", e.name, "err", err)
		return
	}
	m.oplogFor(e).append(op, Frame{Type: FrameResult, Level: "error", Status: string(fsm.StateUnavailable), Step: oe.Step, Node: oe.Node, Message: cause.Error()})
}
