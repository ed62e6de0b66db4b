package clustermanager

import (
	"context"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

// Import starts managing an existing cluster by its kubeconfig. The row is
// saved (Connecting) before Import returns; the connection is made in the
// background, retried while the failure is transient, and ends in Running
// or, for a permanent failure, Unavailable with the reason.
func (m *Manager) Import(ctx context.Context, req model.ImportRequest) (Cluster, error) {
	req.ApplyDefaults()
	if err := validation.ValidateImport(req); err != nil {
		return Cluster{}, err
	}
	now := m.opts.Clock().UTC()
	rec := &record{
		Name:      req.Name,
		Kind:      KindImported,
		CreatedAt: now,
		UpdatedAt: now,
		secrets:   secrets{Kubeconfig: []byte(req.Kubeconfig)},
	}
	e, err := m.reserve(req.Name, fsm.StateNew, rec)
	if err != nil {
		return Cluster{}, err
	}
	c, err := m.start(ctx, e, OpImport, fsm.EventImport, connectStep, true, false)
	if err != nil {
		m.release(e)
		return Cluster{}, err
	}
	return c, nil
}

// Reconnect retries the connection of an Unavailable imported cluster,
// optionally with a new kubeconfig (empty keeps the stored one).
func (m *Manager) Reconnect(ctx context.Context, name string, kubeconfig string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if err := m.refuse(e, ActionReconnect); err != nil {
		return Cluster{}, err
	}
	if kubeconfig != "" {
		if err := validation.ValidateKubeconfig(kubeconfig); err != nil {
			return Cluster{}, err
		}
	}
	return m.start(ctx, e, OpConnect, fsm.EventReconnect, func(r *record) {
		if kubeconfig != "" {
			r.secrets.Kubeconfig = []byte(kubeconfig)
		}
		connectStep(r)
	}, true, false)
}

// connectStep shows a connection as the one step of its operation.
func connectStep(r *record) {
	r.LastOperation.Step, r.LastOperation.Index, r.LastOperation.Total = "connect", 1, 1
}
