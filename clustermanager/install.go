package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Installer is what the manager needs of zke: create, update and remove
// clusters on their hosts. Each call blocks until done or ctx ends.
type Installer interface {
	Create(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error)
	Update(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error)
	Remove(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink, force bool) error
	RotateCertificates(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error)
	// Snapshot takes an etcd snapshot of an installed cluster and hands
	// its stream to save.
	Snapshot(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink, save zke.SaveSnapshot) error
	// Upgrade moves the cluster to cfg's Kubernetes version, node by node.
	Upgrade(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error)
	// Restore puts the cluster's etcd back to the snapshot open yields.
	Restore(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink, snapshot string, open zke.OpenSnapshot) (zke.State, error)
	// KubernetesVersions lists the releases Create can install.
	KubernetesVersions() []string
	// KeptVersions lists older releases a created cluster may stay on,
	// and be reverted to, although Create no longer installs them.
	KeptVersions() []string
}

// ErrNoInstaller reports a create, update or delete of a created cluster on
// a manager built without an installer.
var ErrNoInstaller = errors.New("this singlecloud has no installer")

// installInputs returns what an installer run starts from: the full
// configuration and the installer's state (without the checkpoints of an
// earlier run when fresh).
func (m *Manager) installInputs(e *entry, fresh bool) (model.ClusterConfig, zke.State, error) {
	rec := e.record()
	if m.opts.Installer == nil || rec.Config == nil {
		return model.ClusterConfig{}, zke.State{}, fmt.Errorf("cluster %s: %w", e.name, ErrNoInstaller)
	}
	var prev zke.State
	if rec.secrets.ZKE != nil {
		prev = rec.secrets.ZKE.Clone()
	}
	if fresh {
		prev.ResetProgress()
	}
	return rec.fullConfig(), prev, nil
}

// runInstall is the run of a create, an update or a certificate rotation:
// the installer's work, then a check that the cluster answers with the
// new kubeconfig.
func (m *Manager) runInstall(ctx context.Context, e *entry, r *opRun) outcome {
	cfg, prev, err := m.installInputs(e, r.fresh)
	if err != nil {
		return outcome{err: err}
	}
	if r.kind.typ != OpCreate {
		if err := m.snapshotBefore(ctx, e, r); err != nil {
			return outcome{err: err}
		}
	}
	sink := m.newInstallSink(e, r)
	var st zke.State
	switch r.kind.typ {
	case OpCreate:
		st, err = m.opts.Installer.Create(ctx, cfg, prev, sink)
	case OpRotateCertificates:
		st, err = m.opts.Installer.RotateCertificates(ctx, cfg, prev, sink)
	case OpRestore:
		st, err = m.runRestore(ctx, e, cfg, prev, sink)
	case OpUpgrade:
		st, err = m.opts.Installer.Upgrade(ctx, cfg, prev, sink)
	default:
		st, err = m.opts.Installer.Update(ctx, cfg, prev, sink)
	}
	keep := func(rec *record) {
		state := st.Clone()
		rec.secrets.ZKE = &state
		// A run that failed after it wrote a new admin kubeconfig (a
		// rotation that revoked the old one, or got half-way through
		// replacing its CA) leaves that one: it is what reaches the
		// cluster now.
		if len(st.Kubeconfig) > 0 {
			rec.secrets.Kubeconfig = append([]byte(nil), st.Kubeconfig...)
		}
	}
	if err != nil || ctx.Err() != nil {
		return outcome{err: err, edit: keep}
	}
	res, err := dialKubeconfig(ctx, st.Kubeconfig, m.opts.ProbeTimeout)
	if err != nil {
		return outcome{err: fmt.Errorf("the cluster was installed but its API server does not answer with the new kubeconfig: %w", err), edit: keep}
	}
	e.setClient(res.client)
	return outcome{edit: func(rec *record) {
		state := st.Clone()
		state.ResetProgress()
		rec.secrets.ZKE = &state
		rec.secrets.Kubeconfig = append([]byte(nil), st.Kubeconfig...)
		rec.Version, rec.NodeCount = res.version, res.nodes
		if r.kind.typ == OpRestore {
			rec.RestoreSnapshot = ""
		}
	}}
}

// runDelete is the run of a delete: a created cluster has zke's
// containers and directories removed from its hosts first; an imported one
// is only forgotten. Success fires deleted, which removes every row.
func (m *Manager) runDelete(ctx context.Context, e *entry, r *opRun) outcome {
	if e.record().Kind != KindCreated {
		return outcome{}
	}
	cfg, prev, err := m.installInputs(e, false)
	if err != nil {
		return outcome{err: err}
	}
	return outcome{err: m.opts.Installer.Remove(ctx, cfg, prev, m.newInstallSink(e, r), r.force)}
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

// cleanupContext is for work that must finish after its operation's ctx is
// cancelled (saving Unavailable): detached, but still bounded.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}
