package clustermanager

import (
	"context"
	"sync"
	"time"
)

const (
	// snapshotSweepInterval is how often the schedule looks for a
	// cluster whose next snapshot is due: intervals are hours, a minute
	// is precise enough.
	snapshotSweepInterval = time.Minute
	// scheduledSnapshotWorkers bounds the scheduled snapshots taken at
	// once: each streams a whole etcd over SSH and seals it to disk.
	scheduledSnapshotWorkers = 2
	// snapshotRetryAfter is how soon a scheduled snapshot that failed is
	// tried again (sooner than its interval, not at every sweep).
	snapshotRetryAfter = 30 * time.Minute
)

// snapshotLoop runs the snapshot schedule of every cluster until ctx
// ends, and waits for the snapshots it started.
func (m *Manager) snapshotLoop(ctx context.Context) {
	if m.opts.Snapshots == nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, scheduledSnapshotWorkers)
	t := time.NewTicker(snapshotSweepInterval)
	defer t.Stop()
	for {
		for _, e := range m.snapshotsDue() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				m.scheduledSnapshot(ctx, e)
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// snapshotsDue returns the clusters whose scheduled snapshot is due now:
// installed clusters in the ready list with a schedule, whose last
// snapshot (of any trigger) is older than their interval, and that are
// not marked for a later try, nor already being snapshotted. (A cluster
// in the ready list runs no operation.)
func (m *Manager) snapshotsDue() []*entry {
	now := m.opts.Clock()
	var due []*entry
	for _, e := range m.readyEntries() {
		rec := e.record()
		interval, _ := rec.Config.SnapshotSchedule()
		if interval <= 0 || rec.Kind != KindCreated || rec.secrets.ZKE == nil || rec.secrets.ZKE.Applied == nil || e.snapshotInFlight() {
			continue
		}
		last, retryAt := m.lastSnapshot(e)
		if now.Before(retryAt) || now.Sub(last) < interval {
			continue
		}
		due = append(due, e)
	}
	return due
}

// lastSnapshot returns when e's newest snapshot was taken (read from the
// store the first time) and when a failed scheduled one may be retried.
func (m *Manager) lastSnapshot(e *entry) (time.Time, time.Time) {
	e.mu.Lock()
	known, last, retry := e.snapKnown, e.snapLast, e.snapRetryAt
	e.mu.Unlock()
	if known {
		return last, retry
	}
	list, err := m.opts.Snapshots.List(e.name)
	if err != nil {
		m.log.Warn("snapshots not listed for the schedule", "cluster", e.name, "err", err)
		return m.opts.Clock(), retry
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range list {
		if s.CreatedAt.After(e.snapLast) {
			e.snapLast = s.CreatedAt
		}
	}
	e.snapKnown = true
	return e.snapLast, e.snapRetryAt
}

// scheduledSnapshot takes e's scheduled snapshot; a cluster that became
// busy, one whose snapshot is already in flight, or a failure moves the
// next try snapshotRetryAfter on.
func (m *Manager) scheduledSnapshot(ctx context.Context, e *entry) {
	err := func() error {
		if s := e.machine.Current(); s.Busy() || !s.Ready() {
			return busyError(e.name, s)
		}
		sctx, done, err := m.beginSnapshot(ctx, e)
		if err != nil {
			return err
		}
		defer done()
		_, err = m.snapshotNow(sctx, e, snapshotRequest{trigger: TriggerScheduled, by: scheduleActor})
		return err
	}()
	if err != nil {
		e.mu.Lock()
		e.snapRetryAt = m.opts.Clock().Add(snapshotRetryAfter)
		e.mu.Unlock()
	}
}

// scheduleActor is who scheduled snapshots are taken by.
const scheduleActor = "singlecloud (snapshot schedule)"
