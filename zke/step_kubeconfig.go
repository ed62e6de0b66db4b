package zke

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// writeKubeconfig writes the admin kubeconfig back into the state. It
// points at the first controlplane node's API server, which binds to the
// node's internal address only.
func (r *run) writeKubeconfig(ctx context.Context, rep *workflow.Reporter) error {
	server, err := r.apiServerURL()
	if err != nil {
		return err
	}
	b := r.snapshot().PKI
	if b == nil {
		return fmt.Errorf("no certificates yet")
	}
	admin, err := b.Get(pki.ID(pki.KindAdmin))
	if err != nil {
		return err
	}
	kc, err := pki.KubeconfigFor(admin, b.ClusterCA.Cert, server, r.cfg.Name)
	if err != nil {
		return fmt.Errorf("admin kubeconfig: %w", err)
	}
	r.update(func(st *State) { st.Kubeconfig = kc })
	rep.Report("", "admin kubeconfig for "+server)
	return nil
}
