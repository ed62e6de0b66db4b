package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// RestoreOptions are the body of ?action=restore.
type RestoreOptions struct {
	// Snapshot is the id of the snapshot to restore.
	Snapshot string `json:"snapshot"`
	// Force restores a snapshot that failed its restore drill.
	Force bool `json:"force"`
}

// Restore starts a restore of a created cluster's etcd from one of its
// snapshots (Updating): an automatic snapshot of the data it replaces
// first, then zke stops the control plane and etcd, restores every member
// from the snapshot and starts them again, health-gated. A snapshot that
// failed its drill is refused unless opts.Force; a busy cluster refuses
// the start event (409).
func (m *Manager) Restore(ctx context.Context, name string, opts RestoreOptions) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if m.opts.Snapshots == nil {
		return Cluster{}, ErrNoSnapshots
	}
	if err := m.refuse(e, ActionRestore); err != nil {
		return Cluster{}, err
	}
	rec := e.record()
	switch {
	case opts.Snapshot == "":
		return Cluster{}, validation.Errors{{Field: "snapshot", Reason: "is required: give the id of one of the cluster's snapshots (GET …/snapshots)"}}
	}
	meta, err := m.opts.Snapshots.Get(name, opts.Snapshot)
	switch {
	case errors.Is(err, snapshots.ErrNotFound), errors.Is(err, snapshots.ErrInvalidID):
		return Cluster{}, validation.Errors{{Field: "snapshot", Reason: fmt.Sprintf("cluster %s has no snapshot %q", name, opts.Snapshot)}}
	case err != nil:
		return Cluster{}, err
	case meta.Verification == snapshots.Failed && !opts.Force:
		return Cluster{}, validation.Errors{{Field: "snapshot", Reason: fmt.Sprintf("snapshot %s failed its restore drill (%s); restore it anyway with \"force\": true, or choose a verified snapshot", meta.ID, meta.VerifyError)}}
	}
	// Held from now until the restore succeeds: neither a delete nor the
	// schedule's pruning can take it away from a restore that has
	// stopped etcd.
	if err := m.opts.Snapshots.Hold(name, meta.ID); err != nil {
		return Cluster{}, validation.Errors{{Field: "snapshot", Reason: fmt.Sprintf("cluster %s has no snapshot %q", name, opts.Snapshot)}}
	}
	previous := rec.RestoreSnapshot
	c, err := m.start(ctx, e, OpRestore, fsm.EventRestore, func(r *record) { r.RestoreSnapshot = meta.ID }, true, false)
	if err != nil {
		m.opts.Snapshots.Release(name, meta.ID)
		return c, err
	}
	if previous != "" {
		// An unfinished restore of another snapshot gives way.
		m.opts.Snapshots.Release(name, previous)
	}
	return c, nil
}

// runRestore is the installer's part of a restore: the snapshot the
// record names, streamed from the store to each member.
func (m *Manager) runRestore(ctx context.Context, e *entry, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error) {
	id := e.record().RestoreSnapshot
	if id == "" {
		return prev, errors.New("no snapshot to restore: start the restore again with ?action=restore")
	}
	if m.opts.Snapshots == nil {
		return prev, ErrNoSnapshots
	}
	open := func(context.Context) (io.ReadCloser, error) {
		rc, _, err := m.opts.Snapshots.Open(e.name, id)
		return rc, err
	}
	// Read through once, every chunk authenticated and the sha256
	// compared, before anything on the nodes is stopped.
	if err := checkReadable(open); err != nil {
		return prev, workflow.UserFixable(fmt.Errorf("snapshot %s of cluster %s cannot be read (%w); nothing was stopped: restore another snapshot with ?action=restore", id, e.name, err))
	}
	st, err := m.opts.Installer.Restore(ctx, cfg, prev, sink, id, open)
	if err == nil && ctx.Err() == nil {
		m.opts.Snapshots.Release(e.name, id)
	}
	return st, err
}

// checkReadable reads a whole snapshot through open.
func checkReadable(open zke.OpenSnapshot) error {
	rc, err := open(context.Background())
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// holdRestoring holds, at load, the snapshot an unfinished restore of rec
// reads.
func (m *Manager) holdRestoring(rec *record) {
	if rec.RestoreSnapshot == "" || m.opts.Snapshots == nil {
		return
	}
	if err := m.opts.Snapshots.Hold(rec.Name, rec.RestoreSnapshot); err != nil {
		m.log.Warn("the snapshot of an unfinished restore is gone; restore another one", "cluster", rec.Name, "snapshot", rec.RestoreSnapshot, "err", err)
	}
}

// unfinishedRestore reports whether a restore of the record's cluster
// began and did not finish: its etcd members may hold different data.
func unfinishedRestore(r *record) bool { return r.RestoreSnapshot != "" }
