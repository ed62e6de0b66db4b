package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// OpSnapshot is an etcd snapshot of a created cluster. It leaves the
// cluster's state alone (a Running cluster stays in the ready list while
// its snapshot is taken) and so runs beside the cluster's worker, not on
// it: a stream of minutes never holds up a delete, an update or a health
// transition. One snapshot of a cluster at a time (ErrBusy otherwise); a
// delete interrupts it. It joins the operation history like every
// operation.
const OpSnapshot OperationType = "snapshot"

// What started a snapshot (snapshots.Meta.Trigger).
const (
	TriggerManual    = "manual"
	TriggerScheduled = "scheduled"
)

// triggerBefore is the trigger of the automatic snapshot before typ.
func triggerBefore(typ OperationType) string { return "before " + string(typ) }

var (
	// ErrNoSnapshots reports a snapshot request to a manager built
	// without a snapshot store.
	ErrNoSnapshots = errors.New("this singlecloud keeps no etcd snapshots (no snapshot directory)")
	// ErrNotSnapshottable reports a snapshot of a cluster whose etcd
	// singlecloud cannot reach: an imported cluster, or a created one
	// that never finished its etcd step.
	ErrNotSnapshottable = errors.New("singlecloud takes etcd snapshots only of clusters it installed")
	// ErrBusy reports a request that must wait for the cluster's running
	// operation (or snapshot) to end.
	ErrBusy = errors.New("cluster is busy")
	// ErrSnapshotFailed reports a snapshot that could not be taken from
	// the cluster's etcd (the message says why and what to do).
	ErrSnapshotFailed = errors.New("etcd snapshot failed")
)

// snapshotRequest says why a snapshot is taken and where its log goes.
type snapshotRequest struct {
	trigger string
	by      string
	// pinned snapshots (those taken before an operation) are never
	// removed by the schedule's keep.
	pinned bool
	// run, when set, is the operation the snapshot is taken for: its
	// log gets the snapshot's lines.
	run *opRun
}

// TakeSnapshot takes an etcd snapshot of the cluster now and returns it
// once it is stored (sealed, on the singlecloud server's disk). Its
// restore drill follows in the background. A busy cluster, or one whose
// snapshot is already being taken, refuses with ErrBusy.
func (m *Manager) TakeSnapshot(ctx context.Context, name string) (snapshots.Meta, error) {
	e, err := m.snapshottable(name)
	if err != nil {
		return snapshots.Meta{}, err
	}
	if err := m.refuse(e, ActionSnapshot); err != nil {
		return snapshots.Meta{}, err
	}
	sctx, done, err := m.beginSnapshot(ctx, e)
	if err != nil {
		return snapshots.Meta{}, err
	}
	defer done()
	return m.snapshotNow(sctx, e, snapshotRequest{trigger: TriggerManual, by: ActorFrom(ctx)})
}

// beginSnapshot marks a snapshot of e in flight and returns its context,
// which ends with ctx, at shutdown or when the cluster is deleted, and the
// func that ends it. A snapshot already in flight refuses with ErrBusy.
func (m *Manager) beginSnapshot(ctx context.Context, e *entry) (context.Context, func(), error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snapCancel != nil {
		return nil, nil, fmt.Errorf("a snapshot of cluster %s is being taken: %w; wait for it", e.name, ErrBusy)
	}
	sctx, cancel := context.WithCancel(m.root)
	stop := context.AfterFunc(ctx, cancel)
	e.snapCancel = cancel
	return sctx, func() {
		stop()
		cancel()
		e.mu.Lock()
		e.snapCancel = nil
		e.mu.Unlock()
	}, nil
}

// cancelSnapshot interrupts e's snapshot in flight, if any.
func (e *entry) cancelSnapshot() {
	e.mu.Lock()
	cancel := e.snapCancel
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// snapshotInFlight reports whether a snapshot of e is being taken.
func (e *entry) snapshotInFlight() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapCancel != nil
}

// busyError is the ErrBusy of cluster name in state s.
func busyError(name string, s fsm.State) error {
	return fmt.Errorf("cluster %s is %s: %w; take the snapshot when its operation has ended", name, s, ErrBusy)
}

// snapshottable returns the entry of a listed cluster singlecloud can
// snapshot.
func (m *Manager) snapshottable(name string) (*entry, error) {
	if m.opts.Snapshots == nil {
		return nil, ErrNoSnapshots
	}
	e, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	if !e.machine.Current().Listed() {
		return nil, notFound(name)
	}
	if rec := e.record(); !standingOf(rec).etcdReachable {
		return nil, fmt.Errorf("cluster %s: %w", name, ErrNotSnapshottable)
	}
	return e, nil
}

// snapshotNow takes and stores one snapshot of e. The attempt joins the
// cluster's history; a stored snapshot is pruned to the schedule's keep,
// announced and queued for its drill. A snapshot that ends after its
// cluster was deleted is removed.
func (m *Manager) snapshotNow(ctx context.Context, e *entry, req snapshotRequest) (snapshots.Meta, error) {
	started := m.opts.Clock().UTC()
	cfg, prev, err := m.installInputs(e, false)
	var meta snapshots.Meta
	if err == nil {
		sink := &snapshotSink{m: m, e: e, r: req.run}
		err = m.opts.Installer.Snapshot(ctx, cfg, prev, sink, func(ctx context.Context, member string, src io.Reader) error {
			var serr error
			meta, serr = m.opts.Snapshots.Save(ctx, snapshots.Meta{
				Cluster: e.name, Trigger: req.trigger, Pinned: req.pinned, Member: member, TakenBy: req.by,
			}, src)
			return serr
		})
	}
	op := Operation{Type: OpSnapshot, StartedAt: started, StartedBy: req.by}
	ended := m.opts.Clock().UTC()
	if err != nil {
		oe := operationError(err)
		op.finish(ended, OpFailed, oe)
		m.log.Warn("etcd snapshot failed", "cluster", e.name, "trigger", req.trigger, "err", err)
		e.publish(m.opts.Bus, pubsub.Event{Kind: pubsub.ClusterSnapshotFailed, Cluster: e.name,
			Status: string(e.machine.Current()), Reason: fmt.Sprintf("%s snapshot failed: %v", req.trigger, err), Time: ended})
	} else {
		op.finish(ended, OpSucceeded, nil)
		op.Steps = []StepTiming{{Name: "snapshot", Index: 1, Seconds: ended.Sub(started).Seconds()}}
	}
	if herr := m.repo.appendOperation(e.name, &op); herr != nil {
		m.log.Warn("snapshot not recorded in the operation history", "cluster", e.name, "err", herr)
	}
	if err != nil {
		return snapshots.Meta{}, fmt.Errorf("snapshot of cluster %s: %w: %w", e.name, ErrSnapshotFailed, err)
	}
	if cur, lerr := m.lookup(e.name); lerr != nil || cur != e {
		if derr := m.opts.Snapshots.Delete(e.name, meta.ID); derr != nil {
			m.log.Warn("snapshot of a deleted cluster not removed", "cluster", e.name, "snapshot", meta.ID, "err", derr)
		}
		return snapshots.Meta{}, notFound(e.name)
	}
	m.log.Info("etcd snapshot taken", "cluster", e.name, "snapshot", meta.ID, "trigger", req.trigger,
		"member", meta.Member, "bytes", meta.Size, "revision", meta.Revision, "keys", meta.KeyCount, "duration", ended.Sub(started))
	e.publish(m.opts.Bus, pubsub.Event{Kind: pubsub.ClusterSnapshotTaken, Cluster: e.name, Status: string(e.machine.Current()),
		Reason: fmt.Sprintf("snapshot %s (%s, %d bytes, revision %d, %d keys) taken from %s", meta.ID, req.trigger, meta.Size, meta.Revision, meta.KeyCount, meta.Member),
		Time:   ended})
	if _, keep := e.record().Config.SnapshotSchedule(); keep > 0 {
		removed, perr := m.opts.Snapshots.Prune(e.name, keep)
		if perr != nil {
			m.log.Warn("old snapshots not pruned", "cluster", e.name, "err", perr)
		}
		for _, r := range removed {
			m.log.Info("old etcd snapshot removed", "cluster", e.name, "snapshot", r.ID, "keep", keep)
		}
	}
	m.snapshotTaken(e, meta)
	m.queueDrill(e.name, meta.ID)
	return meta, nil
}

// snapshotBefore takes the automatic snapshot that precedes a fresh run
// of r's kind on a cluster that has been installed; its lines go to the
// operation's log. A failure stops the operation before it changed
// anything: it says so, and how to go on.
func (m *Manager) snapshotBefore(ctx context.Context, e *entry, r *opRun) error {
	if m.opts.Snapshots == nil || !r.fresh {
		return nil
	}
	rec := e.record()
	if rec.Kind != KindCreated || rec.secrets.ZKE == nil || rec.secrets.ZKE.Applied == nil || rec.secrets.ZKE.PKI == nil {
		return nil
	}
	req := snapshotRequest{trigger: triggerBefore(r.kind.typ), pinned: true, run: r}
	if op := rec.LastOperation; op != nil {
		req.by = op.StartedBy
	}
	meta, err := m.snapshotNow(ctx, e, req)
	if err != nil && ctx.Err() == nil && r.kind.typ == OpRestore {
		// A restore is what repairs a broken etcd: it goes on without
		// a copy of the data it replaces, and says so.
		if r.log != nil {
			r.log.append(r.logID, Frame{Type: FrameLog, Level: "warn", Step: "snapshot",
				Message: fmt.Sprintf("no snapshot of the data the restore replaces: %v; the restore goes on", err)})
		}
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return workflow.UserFixable(fmt.Errorf("the automatic etcd snapshot before the %s failed, so the %s did not start: %w; "+
			"make etcd healthy (the cluster's etcd members must answer), then retry", r.kind.typ, r.kind.typ, err))
	}
	if r.log != nil {
		r.log.append(r.logID, Frame{Type: FrameLog, Level: "info", Step: "snapshot", Node: meta.Member,
			Message: fmt.Sprintf("snapshot %s taken before the %s (%d bytes, revision %d); it is kept outside the schedule's rotation", meta.ID, r.kind.typ, meta.Size, meta.Revision)})
	}
	return nil
}

// snapshotSink sends a snapshot's log lines to the operation it is taken
// for, if any, and to the server log; a snapshot has no progress of its
// own to show and changes no state.
type snapshotSink struct {
	m *Manager
	e *entry
	r *opRun
}

func (s *snapshotSink) Progress(workflow.Progress) {}

func (s *snapshotSink) Log(l workflow.Line) {
	if s.r != nil && s.r.log != nil {
		f := lineFrame(l)
		f.Step = "snapshot"
		s.r.log.append(s.r.logID, f)
	}
	s.m.log.Debug("snapshot", "cluster", s.e.name, "node", l.Node, "message", l.Message)
}

func (s *snapshotSink) Checkpoint(context.Context, string, zke.State) error { return nil }

func (s *snapshotSink) Stalled(st workflow.Stall) {
	s.m.log.Warn("etcd snapshot stalled", "cluster", s.e.name, "node", st.Node, "waitingFor", st.WaitingFor)
}

// deleteSnapshots removes every snapshot of a deleted cluster.
func (m *Manager) deleteSnapshots(name string) {
	if m.opts.Snapshots == nil {
		return
	}
	if err := m.opts.Snapshots.DeleteCluster(name); err != nil {
		m.log.Warn("snapshots of a deleted cluster not removed", "cluster", name, "err", err)
	}
}

// snapshotTaken records when e's last snapshot was taken, for the
// schedule.
func (m *Manager) snapshotTaken(e *entry, meta snapshots.Meta) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if meta.CreatedAt.After(e.snapLast) {
		e.snapLast = meta.CreatedAt
	}
	e.snapKnown = true
}
