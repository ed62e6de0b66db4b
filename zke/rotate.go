package zke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// RotateCertificates reissues every leaf certificate of a cluster that
// zke created from the same CAs (the CAs and the service-account key
// stay), puts the new files on every node and restarts every component on
// them: etcd one member at a time, each healthy before the next, then the
// control plane and the workers, each health-gated as in a create; the
// new admin kubeconfig is in the returned state. A cancelled or failed
// rotation resumes from prev: the rotation's cutoff is kept in the state,
// so what it already reissued is not reissued again.
//
// When prev asks for a CA rotation (State.RequestCARotation) or is in the
// middle of one, the certificate authorities are rotated too, in the
// three phases of caRotateSteps; the service-account key stays, so every
// token stays valid.
func (in *Installer) RotateCertificates(ctx context.Context, cfg model.ClusterConfig, prev State, sink Sink) (State, error) {
	if prev.Applied == nil || prev.PKI == nil {
		return prev, workflow.UserFixable(errors.New("the cluster was never created: there are no certificates to rotate; retry the create"))
	}
	r, err := in.newRun(cfg, prev, sink)
	if err != nil {
		return prev, err
	}
	defer r.close()
	if prev.CAPhase != "" {
		err = workflow.Run(ctx, r.caRotateSteps(), r.workflowSink(), r.runOptions(prev))
		st, err := r.result(err)
		if err == nil {
			st.CAPhase = ""
		}
		return st, err
	}
	if r.snapshot().RotateBefore == nil {
		// Certificates carry whole seconds: a cutoff with a fraction
		// would count a leaf issued in its second as older.
		now := in.clock().UTC().Truncate(time.Second)
		r.update(func(s *State) {
			s.RotateBefore = &now
			s.AdminUser = pki.AdminCN + "-" + now.Format("20060102150405")
		})
	}
	err = workflow.Run(ctx, r.rotateSteps(), r.workflowSink(), r.runOptions(prev))
	st, err := r.result(err)
	if err == nil {
		st.RotateBefore = nil
	}
	return st, err
}

// rotateSteps is the rotation workflow: the certificates step reissues
// the leaves (pkiInput carries the cutoff), restart brings every
// component onto them, kubeconfig hands back the new admin kubeconfig.
func (r *run) rotateSteps() []workflow.Step {
	return r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connect},
		{Name: stepPreflight, Run: r.preflight},
		// The kubelet's release binary the restarted kubelets run (a
		// cluster an earlier release made has none yet).
		{Name: stepArtifacts, Run: r.installArtifacts},
		{Name: stepCertificates, Run: r.certificates, Fingerprint: r.certificatesFingerprint, Verify: r.verifyCertificates},
		{Name: stepRestart, Run: r.restartComponents},
		{Name: stepKubeconfig, Run: r.writeKubeconfig},
	})
}

// restartComponents recreates every zke container so that it reads the
// certificate files again, one node at a time so that the cluster keeps
// serving: each etcd member in turn, only while every other member is
// healthy (quorum is kept) and healthy itself before the next; then each
// control-plane node's components, through the controlplane step, which
// recreates what is missing and gates on every node's health (with two
// or more control-plane nodes the API stays up); then the workers'
// kubelet and kube-proxy in batches of nodeConcurrency, through the
// workers step.
func (r *run) restartComponents(ctx context.Context, rep *workflow.Reporter) error {
	etcdNodes := withRole(r.nodes, model.RoleEtcd)
	cps := withRole(r.nodes, model.RoleControlPlane)
	total := float64(len(etcdNodes) + len(cps) + 1)
	done := 0.0
	for _, n := range etcdNodes {
		if err := r.othersHealthy(ctx, n, etcdNodes); err != nil {
			return err
		}
		r.handOffLeadership(ctx, rep, n, etcdNodes)
		if err := r.removeContainers(ctx, n, containerEtcd); err != nil {
			return err
		}
		if err := r.etcdMemberUp(ctx, rep, n, etcdNodes); err != nil {
			return err
		}
		done++
		rep.Advance(done/total, n.Name, "etcd restarted on the new certificates")
	}
	for _, n := range cps {
		if err := r.drainAPIServer(ctx, rep, n); err != nil {
			return err
		}
		if err := r.removeContainers(ctx, n, containerAPIServer, containerControllerManager, containerScheduler); err != nil {
			return err
		}
		if err := r.controlPlane(ctx, rep); err != nil {
			return err
		}
		done++
		rep.Advance(done/total, n.Name, "control plane restarted on the new certificates")
	}
	return r.restartWorkers(ctx, rep)
}

// othersHealthy fails unless every joined etcd member but n answers
// healthy: restarting n then keeps a quorum.
func (r *run) othersHealthy(ctx context.Context, n node, etcdNodes []node) error {
	st := r.snapshot()
	for _, m := range etcdNodes {
		if m.Name == n.Name || !slices.Contains(st.EtcdMembers, m.Name) {
			continue
		}
		if ok, err := r.etcdHealthy(ctx, m); !ok {
			return workflow.UserFixable(nodeErr(m, fmt.Errorf("etcd is not healthy (%v): restarting %s now could cost the cluster its quorum", err, n.Name),
				"bring etcd on "+m.Name+" back, then retry the rotation"))
		}
	}
	return nil
}

// removeContainers removes the named zke containers of n (a missing one
// is not an error), for ensure to create them again.
func (r *run) removeContainers(ctx context.Context, n node, names ...string) error {
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := d.Remove(ctx, name); err != nil {
			return nodeErr(n, fmt.Errorf("remove %s to start it again: %w", name, err), "")
		}
	}
	return nil
}
