package clustermanager

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/validation"
)

// RotateOptions are the choices of a certificate rotation.
type RotateOptions struct {
	// CA asks for the certificate authorities to be rotated too; this
	// build rotates leaves only and refuses it.
	CA bool `json:"ca"`
}

// RotateCertificates starts a rotation of a created cluster's leaf
// certificates (Updating): zke reissues them from the same CAs, rolls
// them out node by node (etcd one member at a time) and the new admin
// kubeconfig is served once the cluster is Running again. It is the run
// of the rotateCertificates row of the operation table (runInstall).
func (m *Manager) RotateCertificates(ctx context.Context, name string, opts RotateOptions) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if !e.machine.Can(fsm.EventRotateCertificates) {
		return Cluster{}, &fsm.TransitionError{Cluster: name, Event: fsm.EventRotateCertificates, State: e.machine.Current()}
	}
	if opts.CA {
		return Cluster{}, validation.Errors{{Field: "ca", Reason: "rotating the certificate authorities is not built yet; rotate the leaf certificates (ca: false)"}}
	}
	rec := e.record()
	if rec.Kind != KindCreated || rec.Config == nil {
		return Cluster{}, validation.Errors{{Field: "action", Reason: fmt.Sprintf("cluster %s is imported: singlecloud did not issue its certificates", name)}}
	}
	if unfinishedCreate(rec) {
		return Cluster{}, validation.Errors{{Field: "action", Reason: fmt.Sprintf("cluster %s was never created: retry the create first", name)}}
	}
	return m.start(ctx, e, OpRotateCertificates, fsm.EventRotateCertificates, nil, true, false)
}
