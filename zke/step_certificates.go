package zke

import (
	"context"
	"fmt"
	"sort"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// certificates makes or renews the cluster's certificates (a CA is made
// once and kept for ever) and copies each node the files it needs.
func (r *run) certificates(ctx context.Context, rep *workflow.Reporter) error {
	prev := r.snapshot().PKI
	bundle, changes, err := pki.Ensure(prev, r.pkiInput())
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	for _, is := range changes.Issued {
		rep.Logf("", "issued %s (%s)", is.ID, is.Reason)
	}
	r.update(func(st *State) { st.PKI = bundle })
	server, err := r.apiServerURL()
	if err != nil {
		return err
	}
	return workflow.ForEach(ctx, r.nodes, nodeConcurrency, func(ctx context.Context, n node) error {
		files, err := bundle.Files(pkiNode(n), pki.FileOptions{Prefix: n.PrefixPath, Server: server, ClusterName: r.cfg.Name})
		if err != nil {
			return nodeErr(n, err, "")
		}
		c, err := r.client(n)
		if err != nil {
			return err
		}
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			if err := c.Upload(ctx, p, files[p].Data, files[p].Mode); err != nil {
				return nodeErr(n, fmt.Errorf("copy %s: %w", p, err), "")
			}
		}
		rep.Report(n.Name, fmt.Sprintf("%d certificate files in place", len(files)))
		return nil
	})
}

// pkiInput describes the cluster to the PKI.
func (r *run) pkiInput() pki.Input {
	in := pki.Input{
		ClusterName:   r.cfg.Name,
		ClusterDomain: r.cfg.ClusterDomain,
		ServiceCIDR:   r.cfg.ServiceCIDR,
		Now:           r.in.clock,
	}
	st := r.snapshot()
	in.AdminUser = st.AdminUser
	if st.RotateBefore != nil {
		in.ReissueIssuedBefore = *st.RotateBefore
	}
	for _, n := range r.nodes {
		in.Nodes = append(in.Nodes, pkiNode(n))
	}
	if r.sharedEndpoint() {
		in.ExtraSANs = []string{r.cfg.ControlPlaneEndpoint.VIP}
	}
	return in
}

func pkiNode(n node) pki.Node {
	return pki.Node{Name: n.Name, Address: n.Address, InternalAddress: n.InternalAddress, Roles: n.Roles}
}

// apiServerURL is the address node components and the admin kubeconfig
// reach the API server on: the shared endpoint, or else the first
// controlplane node's internal address.
func (r *run) apiServerURL() (string, error) {
	if ep := r.cfg.SharedEndpoint(); ep != "" {
		return "https://" + ep, nil
	}
	cps := withRole(r.nodes, model.RoleControlPlane)
	if len(cps) == 0 {
		return "", workflow.UserFixable(fmt.Errorf("the cluster has no controlplane node"))
	}
	return "https://" + hostPort(cps[0].InternalAddress, portAPIServer), nil
}
