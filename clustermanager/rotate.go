package clustermanager

import (
	"context"
	"slices"

	"github.com/zdnscloud/singlecloud/fsm"
)

// RotateOptions are the choices of a certificate rotation.
type RotateOptions struct {
	// CA asks for the certificate authorities to be rotated too, through
	// a trust bundle (zke's caRotateSteps): an admin kubeconfig handed
	// out before works until the old CAs are dropped at the end.
	CA bool `json:"ca"`
}

// RotateCertificates starts a rotation of a created cluster's leaf
// certificates (Updating): zke reissues them from the same CAs, rolls
// them out node by node (etcd one member at a time) and the new admin
// kubeconfig is served once the cluster is Running again. With opts.CA
// the CAs are replaced as well. It is the run of the rotateCertificates
// row of the operation table (runInstall). A CA rotation that did not
// finish is carried on by any later rotation, whatever it asks.
func (m *Manager) RotateCertificates(ctx context.Context, name string, opts RotateOptions) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if err := m.refuse(e, ActionRotateCertificates); err != nil {
		return Cluster{}, err
	}
	var edit change
	if opts.CA {
		edit = func(r *record) {
			if r.secrets.ZKE != nil {
				st := r.secrets.ZKE.Clone()
				st.RequestCARotation()
				r.secrets.ZKE = &st
			}
		}
	}
	return m.start(ctx, e, OpRotateCertificates, fsm.EventRotateCertificates, edit, true, false)
}

// pendingNodes reports whether the record's desired nodes differ from the
// ones the installer last applied: an update that failed or was
// cancelled. A rotation then would apply the pending change half way.
func pendingNodes(r *record) bool {
	st := r.secrets.ZKE
	if r.Config == nil || st == nil || st.Applied == nil {
		return false
	}
	want, got := r.Config.Nodes, st.Applied.Nodes
	if len(want) != len(got) {
		return true
	}
	for i := range want {
		if want[i].Name != got[i].Name || want[i].Address != got[i].Address || !slices.Equal(want[i].Roles, got[i].Roles) {
			return true
		}
	}
	return false
}

// unfinishedRotation reports whether a rotation of the record's cluster
// began and did not finish: its new certificates may be on the nodes
// while components still run on the old ones.
func unfinishedRotation(r *record) bool {
	return r.secrets.ZKE != nil && (r.secrets.ZKE.RotateBefore != nil || r.secrets.ZKE.CAPhase != "")
}
