package clustermanager

import (
	"io"

	"github.com/zdnscloud/singlecloud/snapshots"
)

// Snapshots lists the cluster's etcd snapshots, newest first, each with
// its drill's verdict.
func (m *Manager) Snapshots(name string) ([]snapshots.Meta, error) {
	if err := m.snapshotCluster(name); err != nil {
		return nil, err
	}
	return m.opts.Snapshots.List(name)
}

// Snapshot returns one of the cluster's snapshots.
func (m *Manager) Snapshot(name, id string) (snapshots.Meta, error) {
	if err := m.snapshotCluster(name); err != nil {
		return snapshots.Meta{}, err
	}
	return m.opts.Snapshots.Get(name, id)
}

// OpenSnapshot streams the decrypted bytes of one of the cluster's
// snapshots (an etcd snapshot file, as etcdctl snapshot save writes it).
// Every chunk is authenticated as it is read: a file altered on disk ends
// the stream with an error wrapping snapshots.ErrCorrupt.
func (m *Manager) OpenSnapshot(name, id string) (io.ReadCloser, snapshots.Meta, error) {
	if err := m.snapshotCluster(name); err != nil {
		return nil, snapshots.Meta{}, err
	}
	return m.opts.Snapshots.Open(name, id)
}

// DeleteSnapshot removes one of the cluster's snapshots.
func (m *Manager) DeleteSnapshot(name, id string) error {
	if err := m.snapshotCluster(name); err != nil {
		return err
	}
	if err := m.opts.Snapshots.Delete(name, id); err != nil {
		return err
	}
	m.log.Info("etcd snapshot deleted", "cluster", name, "snapshot", id)
	return nil
}

// snapshotCluster checks that name is a listed cluster and that this
// manager keeps snapshots. An imported cluster has none: its list is
// empty, not an error.
func (m *Manager) snapshotCluster(name string) error {
	if m.opts.Snapshots == nil {
		return ErrNoSnapshots
	}
	e, err := m.lookup(name)
	if err != nil {
		return err
	}
	if !e.machine.Current().Listed() {
		return notFound(name)
	}
	return nil
}
