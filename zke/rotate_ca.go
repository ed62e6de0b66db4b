package zke

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// CAPhase is how far a CA rotation got (pki's carotation.go describes
// the phases). A phase is entered, and recorded in the State, before its
// files go to the nodes; a resumed rotation redoes the phase it is in and
// passes over the ones before it.
type CAPhase string

const (
	// CAPhaseRequested: the caller asked for a CA rotation
	// (State.RequestCARotation); nothing changed yet.
	CAPhaseRequested CAPhase = "requested"
	// CAPhaseTrust: new CAs exist and are being trusted beside the old.
	CAPhaseTrust CAPhase = "trust"
	// CAPhaseReissue: the new CAs sign; every leaf is being reissued.
	CAPhaseReissue CAPhase = "reissue"
	// CAPhaseDrop: the old CAs are being dropped from every trust.
	CAPhaseDrop CAPhase = "drop"
)

// order ranks the phases; an unknown phase ranks as requested.
func (p CAPhase) order() int {
	switch p {
	case CAPhaseTrust:
		return 1
	case CAPhaseReissue:
		return 2
	case CAPhaseDrop:
		return 3
	}
	return 0
}

// RequestCARotation marks s so that the next RotateCertificates also
// rotates the certificate authorities. A rotation already under way is
// left in its phase.
func (s *State) RequestCARotation() {
	if s.CAPhase == "" {
		s.CAPhase = CAPhaseRequested
	}
}

// caRotateSteps is the CA rotation workflow: three phases, each putting
// its files on every node and restarting every component on them in the
// rolling order of a leaf rotation (restartComponents), then the new
// admin kubeconfig. The phase steps have no fingerprint: a resumed
// rotation passes over the phases the State shows are done and redoes
// the one it is in.
func (r *run) caRotateSteps() []workflow.Step {
	return r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connect},
		{Name: stepPreflight, Run: r.preflight},
		// The kubelet's release binary the restarted kubelets run (a
		// cluster an earlier release made has none yet).
		{Name: stepArtifacts, Run: r.installArtifacts},
		{Name: stepTrustCA, Run: r.trustNewCAs},
		{Name: stepReissue, Run: r.reissueFromNewCAs},
		{Name: stepDropCA, Run: r.dropOldCAs},
		{Name: stepKubeconfig, Run: r.writeKubeconfig},
	})
}

// trustNewCAs makes the new CAs and has every component trust them beside
// the old ones.
func (r *run) trustNewCAs(ctx context.Context, rep *workflow.Reporter) error {
	_, err := r.caPhase(ctx, rep, CAPhaseTrust, func(b *pki.Bundle) (*pki.Bundle, error) {
		if b.Incoming != nil {
			return b, nil
		}
		return b.BeginCARotation(r.pkiInput())
	}, "every component trusts the old and the new certificate authorities")
	return err
}

// reissueFromNewCAs makes the new CAs the signers and reissues every leaf
// from them; the old CAs stay trusted. Then, while both are trusted,
// CoreDNS is restarted on the trust bundle (a client in a pod keeps the
// CA it read at its start, and the old one alone will not verify the API
// servers once the old CAs are dropped), and the state's admin kubeconfig
// becomes the new certificate with the trust bundle, which works in this
// phase and the next: a rotation that fails later leaves singlecloud a
// kubeconfig that reaches the cluster.
func (r *run) reissueFromNewCAs(ctx context.Context, rep *workflow.Reporter) error {
	ran, err := r.caPhase(ctx, rep, CAPhaseReissue, (*pki.Bundle).PromoteIncoming,
		"every component runs on certificates of the new certificate authorities")
	if err != nil || !ran {
		return err
	}
	if err := r.restartCoreDNS(ctx, rep); err != nil {
		return err
	}
	kc, _, err := r.adminKubeconfig()
	if err != nil {
		return err
	}
	r.update(func(s *State) { s.Kubeconfig = kc })
	return r.save(ctx)
}

// dropOldCAs stops trusting the old CAs and gives the API servers their
// new-CA serving certificates.
func (r *run) dropOldCAs(ctx context.Context, rep *workflow.Reporter) error {
	_, err := r.caPhase(ctx, rep, CAPhaseDrop, (*pki.Bundle).DropRetiring,
		"the old certificate authorities are trusted no more")
	return err
}

// caPhase enters phase (advance turns the previous phase's bundle into
// this one's) unless the State shows it was entered already, then puts
// the bundle's files on every node and restarts every component on them.
// A phase the State shows as passed is not done again (ran is false).
func (r *run) caPhase(ctx context.Context, rep *workflow.Reporter, phase CAPhase, advance func(*pki.Bundle) (*pki.Bundle, error), done string) (ran bool, err error) {
	st := r.snapshot()
	switch cur := st.CAPhase.order(); {
	case cur > phase.order():
		rep.Report("", "done by an earlier run: "+done)
		return false, nil
	case cur < phase.order():
		if st.PKI == nil {
			return false, fmt.Errorf("no certificates: the cluster state holds no PKI")
		}
		next, err := advance(st.PKI)
		if err != nil {
			return false, fmt.Errorf("certificate authorities: %w", err)
		}
		r.update(func(s *State) { s.PKI, s.CAPhase = next, phase })
		// Stored before any file of the phase reaches a node: a resumed
		// rotation must not go back to an earlier phase's files once
		// components may run on this one's.
		if err := r.save(ctx); err != nil {
			return false, err
		}
		rep.Logf("", "certificate authorities: entering the %s phase", phase)
	}
	if err := r.certificates(ctx, rep); err != nil {
		return false, err
	}
	if err := r.restartComponents(ctx, rep); err != nil {
		return false, err
	}
	rep.Report("", done)
	return true, nil
}
