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
		LastOperation: &Operation{
			Type: OpImport, State: OpRunning, Step: "connect", Index: 1, Total: 1, StartedAt: now,
		},
	}
	e, err := m.reserve(req.Name, fsm.StateNew, rec)
	if err != nil {
		return Cluster{}, err
	}
	op := m.prepareOp(e, OpConnect)
	if err := e.machine.Fire(ctx, fsm.EventImport, change(nil)); err != nil {
		m.abandon(e, op)
		m.release(e)
		return Cluster{}, err
	}
	m.launch(e, op, func(ctx context.Context) { m.connectLoop(ctx, e) })
	return m.view(e), nil
}

// Reconnect retries the connection of an Unavailable imported cluster,
// optionally with a new kubeconfig (empty keeps the stored one).
func (m *Manager) Reconnect(ctx context.Context, name string, kubeconfig string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if e.record().Kind != KindImported {
		return Cluster{}, validation.Errors{{Field: "action", Reason: "reconnect applies to imported clusters; use ?action=retry for a created one"}}
	}
	if kubeconfig != "" {
		if err := validation.ValidateKubeconfig(kubeconfig); err != nil {
			return Cluster{}, err
		}
	}
	now := m.opts.Clock().UTC()
	op := m.prepareOp(e, OpConnect)
	err = e.machine.Fire(ctx, fsm.EventReconnect, change(func(r *record) {
		if kubeconfig != "" {
			r.secrets.Kubeconfig = []byte(kubeconfig)
		}
		r.Reason = ""
		r.LastOperation = &Operation{Type: OpConnect, State: OpRunning, Step: "connect", Index: 1, Total: 1, StartedAt: now}
	}))
	if err != nil {
		m.abandon(e, op)
		return Cluster{}, err
	}
	m.launch(e, op, func(ctx context.Context) { m.connectLoop(ctx, e) })
	return m.view(e), nil
}
