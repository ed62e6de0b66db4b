package clustermanager

import (
	"context"
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/snapshots"
)

// drillQueueSize bounds the snapshots waiting for their drill; one that
// does not fit stays unverified and is drilled at the next start.
const drillQueueSize = 1024

// drillJob is one snapshot waiting for its restore drill.
type drillJob struct{ cluster, id string }

// queueDrill queues the restore drill of a new snapshot.
func (m *Manager) queueDrill(cluster, id string) {
	if m.drills == nil {
		return
	}
	select {
	case m.drills <- drillJob{cluster, id}:
	default:
		m.log.Warn("restore drill not queued (too many waiting); it runs at the next start", "cluster", cluster, "snapshot", id)
	}
}

// drillLoop drills every snapshot left unverified by an earlier run, then
// every new one, one at a time, until ctx ends.
func (m *Manager) drillLoop(ctx context.Context) {
	if m.drills == nil {
		return
	}
	m.removeOrphanSnapshots()
	m.queueUnverified()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-m.drills:
			m.drillOne(ctx, j)
		}
	}
}

// removeOrphanSnapshots removes the snapshots of clusters that no longer
// exist (a crash between a cluster's delete and the removal of its
// snapshots): a new cluster of the same name must never be offered its
// predecessor's data.
func (m *Manager) removeOrphanSnapshots() {
	names, err := m.opts.Snapshots.Clusters()
	if err != nil {
		m.log.Warn("snapshot directories not checked for deleted clusters", "err", err)
		return
	}
	for _, name := range names {
		if _, err := m.lookup(name); err == nil {
			continue
		}
		if err := m.opts.Snapshots.DeleteCluster(name); err != nil {
			m.log.Warn("snapshots of a deleted cluster not removed", "cluster", name, "err", err)
			continue
		}
		m.log.Info("snapshots of a deleted cluster removed", "cluster", name)
	}
}

// queueUnverified queues the drill of every snapshot that has none.
func (m *Manager) queueUnverified() {
	for _, c := range m.List(false) {
		list, err := m.opts.Snapshots.List(c.Name)
		if err != nil {
			m.log.Warn("snapshots not listed for their drills", "cluster", c.Name, "err", err)
			continue
		}
		for i := len(list) - 1; i >= 0; i-- {
			if list[i].Verification == snapshots.Unverified {
				m.queueDrill(c.Name, list[i].ID)
			}
		}
	}
}

// drillOne restores one snapshot into a scratch etcd on this server and
// announces the verdict; a snapshot deleted meanwhile is passed over.
func (m *Manager) drillOne(ctx context.Context, j drillJob) {
	meta, err := m.drill.Drill(ctx, j.cluster, j.id)
	switch {
	case errors.Is(err, snapshots.ErrNotFound):
		return
	case ctx.Err() != nil:
		return
	}
	ev := pubsub.Event{Cluster: j.cluster, Time: m.opts.Clock().UTC()}
	if e, lerr := m.lookup(j.cluster); lerr == nil {
		ev.Status = string(e.machine.Current())
	}
	if err != nil {
		m.log.Warn("snapshot failed its restore drill", "cluster", j.cluster, "snapshot", j.id, "err", err)
		ev.Kind = pubsub.ClusterSnapshotFailed
		ev.Reason = fmt.Sprintf("snapshot %s failed its restore drill: %v; take a new snapshot and check the cluster's etcd", j.id, err)
	} else {
		m.log.Info("snapshot verified by a restore drill", "cluster", j.cluster, "snapshot", j.id, "keys", meta.KeyCount, "revision", meta.Revision, "seconds", meta.DrillSeconds)
		ev.Kind = pubsub.ClusterSnapshotVerified
		ev.Reason = fmt.Sprintf("snapshot %s restored in a drill: %d keys at revision %d, in %.1fs", j.id, meta.KeyCount, meta.Revision, meta.DrillSeconds)
	}
	m.publishEvent(j.cluster, ev)
}

// publishEvent announces ev on the cluster's entry (ordered with its other
// announcements), or on the bus when the cluster is gone.
func (m *Manager) publishEvent(cluster string, ev pubsub.Event) {
	if e, err := m.lookup(cluster); err == nil {
		e.publish(m.opts.Bus, ev)
		return
	}
	m.opts.Bus.Publish(ev)
}
