package clustermanager

import (
	"context"
	"maps"

	"github.com/zdnscloud/singlecloud/fsm"
)

// Revert undoes an upgrade that failed or was cancelled: an upgrade back
// to the version (and images) the cluster last ran, node by node, which
// passes over the nodes that never moved. ?action=retry carries the
// upgrade on instead.
func (m *Manager) Revert(ctx context.Context, name string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if err := m.refuse(e, ActionRevert); err != nil {
		return Cluster{}, err
	}
	applied := e.record().secrets.ZKE.Applied
	return m.start(ctx, e, OpUpgrade, fsm.EventUpdate, func(r *record) {
		r.Config.KubernetesVersion = applied.KubernetesVersion
		r.Config.Images = maps.Clone(applied.Images)
	}, true, false)
}

// unfinishedUpgrade reports whether the record's desired Kubernetes
// version is not the one the installer last applied: an upgrade (or a
// revert) failed or was cancelled.
func unfinishedUpgrade(r *record) bool {
	st := r.secrets.ZKE
	return r.Config != nil && st != nil && st.Applied != nil && st.Applied.KubernetesVersion != r.Config.KubernetesVersion
}
