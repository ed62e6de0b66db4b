package zke

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
		{Name: stepTrustCA, Run: r.trustNewCAs},
		{Name: stepReissue, Run: r.reissueFromNewCAs},
		{Name: stepDropCA, Run: r.dropOldCAs},
		{Name: stepKubeconfig, Run: r.writeKubeconfig},
	})
}

// trustNewCAs makes the new CAs and has every component trust them beside
// the old ones.
func (r *run) trustNewCAs(ctx context.Context, rep *workflow.Reporter) error {
	return r.caPhase(ctx, rep, CAPhaseTrust, func(b *pki.Bundle) (*pki.Bundle, error) {
		if b.Incoming != nil {
			return b, nil
		}
		return b.BeginCARotation(r.pkiInput())
	}, "every component trusts the old and the new certificate authorities")
}

// reissueFromNewCAs makes the new CAs the signers and reissues every leaf
// from them; the old CAs stay trusted.
func (r *run) reissueFromNewCAs(ctx context.Context, rep *workflow.Reporter) error {
	return r.caPhase(ctx, rep, CAPhaseReissue, (*pki.Bundle).PromoteIncoming,
		"every component runs on certificates of the new certificate authorities")
}

// dropOldCAs stops trusting the old CAs, gives the API servers their
// new-CA serving certificates and restarts CoreDNS, whose client holds
// the old CA in memory.
func (r *run) dropOldCAs(ctx context.Context, rep *workflow.Reporter) error {
	if err := r.caPhase(ctx, rep, CAPhaseDrop, (*pki.Bundle).DropRetiring,
		"the old certificate authorities are trusted no more"); err != nil {
		return err
	}
	return r.restartCoreDNS(ctx, rep)
}

// caPhase enters phase (advance turns the previous phase's bundle into
// this one's) unless the State shows it was entered already, then puts
// the bundle's files on every node and restarts every component on them.
// A phase the State shows as passed is not done again.
func (r *run) caPhase(ctx context.Context, rep *workflow.Reporter, phase CAPhase, advance func(*pki.Bundle) (*pki.Bundle, error), done string) error {
	st := r.snapshot()
	switch cur := st.CAPhase.order(); {
	case cur > phase.order():
		rep.Report("", "done by an earlier run: "+done)
		return nil
	case cur < phase.order():
		if st.PKI == nil {
			return fmt.Errorf("no certificates: the cluster state holds no PKI")
		}
		next, err := advance(st.PKI)
		if err != nil {
			return fmt.Errorf("certificate authorities: %w", err)
		}
		r.update(func(s *State) { s.PKI, s.CAPhase = next, phase })
		rep.Logf("", "certificate authorities: entering the %s phase", phase)
	}
	if err := r.certificates(ctx, rep); err != nil {
		return err
	}
	if err := r.restartComponents(ctx, rep); err != nil {
		return err
	}
	rep.Report("", done)
	return nil
}

// restartCoreDNS rolls CoreDNS's pods (a changed pod-template annotation,
// as kubectl rollout restart does) and waits for the new ones: a client in
// a pod keeps the CA it read at its start, and the old one no longer
// verifies the API servers.
func (r *run) restartCoreDNS(ctx context.Context, rep *workflow.Reporter) error {
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{"io.zke.restartedAt": r.in.clock().UTC().Format(time.RFC3339)}}}}})
	if err != nil {
		return err
	}
	if _, err := kube.AppsV1().Deployments(metav1.NamespaceSystem).Patch(ctx, corednsName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("restart CoreDNS on the new certificate authority: %w", err)
	}
	rep.Report("", "CoreDNS restarting on the new certificate authority (pods of your own that talk to the API server should be restarted too)")
	return r.waitCoreDNS(ctx, rep, kube, corednsReadyTimeout)
}
