package clustermanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

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
}

// ErrNoInstaller reports a create, update or delete of a created cluster on
// a manager built without an installer.
var ErrNoInstaller = errors.New("this singlecloud has no installer")

// installSink records an operation's progress: log lines and progress
// frames go to the operation log (and its followers); checkpoints save the
// installer's state and the finished steps, so a crash resumes from there.
type installSink struct {
	m   *Manager
	e   *entry
	log *opLog

	mu       sync.Mutex
	progress workflow.Progress
}

func (s *installSink) Progress(p workflow.Progress) {
	s.mu.Lock()
	s.progress = p
	s.mu.Unlock()
	s.log.append(progressFrame(p))
}

func (s *installSink) Log(l workflow.Line) { s.log.append(lineFrame(l)) }

// Checkpoint writes the installer state, the finished steps and the
// operation's progress in one transaction. It is not a state transition:
// the cluster stays in its state.
func (s *installSink) Checkpoint(ctx context.Context, step string, st zke.State) error {
	s.mu.Lock()
	p := s.progress
	s.mu.Unlock()
	next := s.e.record().clone()
	state := st.Clone()
	next.secrets.ZKE = &state
	if op := next.LastOperation; op != nil && step != "" {
		op.Step, op.Index, op.Total, op.Percent = step, p.Index, p.Total, p.Percent
	}
	next.UpdatedAt = s.m.opts.Clock().UTC()
	b, err := encodeRecord(next, s.m.opts.Sealer)
	if err != nil {
		return err
	}
	cp, err := json.Marshal(state.Checkpoints)
	if err != nil {
		return fmt.Errorf("encode checkpoints of %s: %w", s.e.name, err)
	}
	err = s.m.opts.Store.Update(func(tx storage.Tx) error {
		if err := tx.Put(storage.BucketClusters, s.e.name, b); err != nil {
			return err
		}
		return tx.Put(storage.BucketCheckpoints, s.e.name, cp)
	})
	if err != nil {
		return fmt.Errorf("checkpoint %s of cluster %s: %w", step, s.e.name, err)
	}
	s.e.setRecord(next)
	_ = s.log.flush()
	return nil
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

// startInstall starts a create or update of a created cluster as e's
// operation. fresh is false when resuming (retry, restart), so that the
// log of the interrupted run is kept and the new run appends to it.
func (m *Manager) startInstall(e *entry, kind OperationType, fresh bool) {
	if err := m.oplogFor(e).begin(fresh); err != nil {
		m.log.Warn("operation log not cleared", "cluster", e.name, "err", err)
	}
	m.startOp(e, kind, func(ctx context.Context) { m.runInstall(ctx, e, kind, fresh) })
}

// runInstall runs a create or update and fires the outcome.
func (m *Manager) runInstall(ctx context.Context, e *entry, kind OperationType, fresh bool) {
	log := m.oplogFor(e)
	fctx, stopFlush := context.WithCancel(context.WithoutCancel(ctx))
	flushed := make(chan struct{})
	go func() { defer close(flushed); log.flushLoop(fctx) }()
	defer func() { stopFlush(); <-flushed }()

	rec := e.record()
	if m.opts.Installer == nil || rec.Config == nil {
		m.failInstall(e, kind, fmt.Errorf("cluster %s: %w", e.name, ErrNoInstaller))
		return
	}
	cfg := *rec.Config
	cfg.SSHKey = rec.secrets.SSHKey
	var prev zke.State
	if rec.secrets.ZKE != nil {
		prev = rec.secrets.ZKE.Clone()
	}
	if fresh {
		prev.Checkpoints = nil
	}
	sink := &installSink{m: m, e: e, log: log}
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
		log.append(Frame{Type: FrameLog, Level: "warn", Message: "operation canceled"})
		return // the canceller or the shutdown moves the state
	}
	if err != nil {
		m.failInstall(e, kind, err)
		return
	}
	m.succeedInstall(ctx, e, kind, st)
}

func (m *Manager) succeedInstall(ctx context.Context, e *entry, kind OperationType, st zke.State) {
	res, err := dialKubeconfig(ctx, st.Kubeconfig, m.opts.ProbeTimeout)
	if err != nil {
		m.failInstall(e, kind, fmt.Errorf("the cluster was installed but its API server does not answer with the new kubeconfig: %w", err))
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
	m.oplogFor(e).append(Frame{Type: FrameResult, Status: string(fsm.StateRunning), Message: string(kind) + " succeeded"})
}

func (m *Manager) failInstall(e *entry, kind OperationType, cause error) {
	now := m.opts.Clock().UTC()
	ev := fsm.EventCreateFailed
	if kind == OpUpdate {
		ev = fsm.EventUpdateFailed
	}
	oe := operationError(cause)
	err := e.machine.Fire(m.root, ev, change(func(r *record) {
		r.Reason = fmt.Sprintf("%s failed: %v", kind, cause)
		if r.LastOperation != nil {
			r.LastOperation.finish(now, OpFailed, oe)
		}
	}))
	if err != nil {
		m.log.Error("install failed and the failure was not saved", "cluster", e.name, "err", err)
	}
	m.oplogFor(e).append(Frame{Type: FrameResult, Level: "error", Status: string(fsm.StateUnavailable), Step: oe.Step, Node: oe.Node, Message: cause.Error()})
}
