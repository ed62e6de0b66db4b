package clustermanager

import (
	"context"
	"fmt"
	"maps"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/validation"
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
	if !e.machine.Can(fsm.EventUpdate) {
		return Cluster{}, &fsm.TransitionError{Cluster: name, Event: fsm.EventUpdate, State: e.machine.Current()}
	}
	rec := e.record()
	if rec.Kind != KindCreated || !unfinishedUpgrade(rec) {
		return Cluster{}, validation.Errors{{Field: "action", Reason: fmt.Sprintf("cluster %s has no unfinished upgrade to revert", name)}}
	}
	applied := rec.secrets.ZKE.Applied
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
