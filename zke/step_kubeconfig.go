package zke

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// writeKubeconfig binds the admin certificate's user to cluster-admin,
// dropping whichever user the binding named before (a kubeconfig handed
// out before a rotation is refused from then on), and writes the admin
// kubeconfig back into the state. It points at the shared endpoint, or at
// the first controlplane node's API server.
func (r *run) writeKubeconfig(ctx context.Context, rep *workflow.Reporter) error {
	kc, user, err := r.adminKubeconfig()
	if err != nil {
		return err
	}
	if err := r.grantAdmin(ctx, rep, user); err != nil {
		return err
	}
	r.update(func(st *State) { st.Kubeconfig = kc })
	rep.Report("", "admin kubeconfig for "+user)
	return nil
}

// adminKubeconfig builds the admin kubeconfig from the PKI (trusting the
// CAs' trust bundle) and returns it with its user.
func (r *run) adminKubeconfig() ([]byte, string, error) {
	server, err := r.apiServerURL()
	if err != nil {
		return nil, "", err
	}
	b := r.snapshot().PKI
	if b == nil {
		return nil, "", fmt.Errorf("no certificates yet")
	}
	admin, err := b.Get(pki.ID(pki.KindAdmin))
	if err != nil {
		return nil, "", err
	}
	kc, err := pki.KubeconfigFor(admin, b.Trust(pki.KindClusterCA), server, r.cfg.Name)
	if err != nil {
		return nil, "", fmt.Errorf("admin kubeconfig: %w", err)
	}
	cert, err := admin.X509()
	if err != nil {
		return nil, "", fmt.Errorf("admin certificate: %w", err)
	}
	return kc, cert.Subject.CommonName, nil
}
