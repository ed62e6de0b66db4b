package zke

import (
	"context"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// The step names, as shown in progress frames and checkpoints and as a
// cluster's stepDeadlines names them (spelled once, in model).
const (
	stepConnect      = model.StepConnect
	stepPreflight    = model.StepPreflight
	stepCertificates = model.StepCertificates
	stepImages       = model.StepImages
	stepEtcd         = model.StepEtcd
	stepControlPlane = model.StepControlPlane
	stepWorkers      = model.StepWorkers
	stepNetwork      = model.StepNetwork
	stepAddons       = model.StepAddons
	stepKubeconfig   = model.StepKubeconfig
	stepDrain        = model.StepDrain
	stepClean        = model.StepClean
	stepRestart      = model.StepRestart
	stepSnapshot     = model.StepSnapshot
	stepStop         = model.StepStop
	stepRestore      = model.StepRestore
	stepTrustCA      = model.StepTrustCA
	stepReissue      = model.StepReissue
	stepDropCA       = model.StepDropCA
)

// createSteps is the create workflow (SPEC §6). Which steps a resumed
// run may skip, and why the others always run:
//   - connect always runs: it opens the SSH connections and Docker
//     clients every later step uses (and pins host keys);
//   - preflight always runs: it fills the node facts (capabilities) that
//     the kubelet and kube-proxy specs are built from, records in the
//     State the paths zke may write on each node and refuses a node where
//     one holds something zke did not make (ownership.go), and it changes
//     nothing on the hosts;
//   - artifacts, certificates, images, etcd, controlplane, workers, network and
//     addons are skipped when their fingerprint (fingerprint.go) is
//     unchanged and their Verify (verify*.go) finds their effect in
//     place. None leaves in-memory results for later steps: what they
//     make that later steps read (the PKI, the etcd membership) is in
//     the State the resume starts from;
//   - kubeconfig always runs: one API call (the admin's binding) and a
//     copy of the admin kubeconfig into the State.
//
// A step may be skipped after one that ran: a change an earlier step
// makes to what a later one acts on is part of the later one's
// fingerprint (the etcd node set in the API server's spec, the images in
// every container spec), and the later one's Verify checks the hosts as
// they are now. Renewed certificate files are not one of those: no step
// restarts a component for them today, skipped or not.
func (r *run) createSteps() []workflow.Step {
	return r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connect},
		{Name: stepPreflight, Run: r.preflight},
		{Name: stepArtifacts, Run: r.installArtifacts, Fingerprint: r.artifactsFingerprint, Verify: r.verifyArtifacts},
		{Name: stepCertificates, Run: r.certificates, Fingerprint: r.certificatesFingerprint, Verify: r.verifyCertificates},
		{Name: stepImages, Run: r.pullImages, Fingerprint: r.imagesFingerprint, Verify: r.verifyImages},
		{Name: stepEtcd, Run: r.etcd, Fingerprint: r.etcdFingerprint, Verify: r.verifyEtcd},
		{Name: stepControlPlane, Run: r.controlPlane, Fingerprint: r.controlPlaneFingerprint, Verify: r.verifyControlPlane},
		{Name: stepWorkers, Run: r.workers, Fingerprint: r.workersFingerprint, Verify: r.verifyWorkers},
		{Name: stepNetwork, Run: r.network, Fingerprint: r.networkFingerprint, Verify: r.verifyNetwork},
		{Name: stepAddons, Run: r.addons, Fingerprint: r.addonsFingerprint, Verify: r.verifyAddons},
		{Name: stepKubeconfig, Run: r.writeKubeconfig},
	})
}

// updateSteps applies a changed node list: the create steps (idempotent:
// unchanged nodes see no change) with removed workers drained and cleaned
// before the kubeconfig is written back. drain is skipped when the
// removed nodes are verifiably gone from Kubernetes; clean always runs:
// checking a removed host costs as much as cleaning it (it may be
// unreachable, which clean reports and passes over).
func (r *run) updateSteps() []workflow.Step {
	create := r.createSteps()
	last := len(create) - 1
	steps := append([]workflow.Step(nil), create[:last]...)
	steps = append(steps, r.prepare([]workflow.Step{
		{Name: stepDrain, Run: r.drainRemoved, Fingerprint: r.drainFingerprint, Verify: r.verifyDrain},
		{Name: stepClean, Run: r.cleanRemoved},
	})...)
	return append(steps, create[last])
}

// removeSteps tears the cluster down.
func (r *run) removeSteps(force bool) []workflow.Step {
	return r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connectForRemove(force)},
		{Name: stepClean, Run: r.cleanAll},
	})
}

// prepare gives every step its deadline (deadlines.go), and makes each
// step that runs forget the fingerprint an earlier run recorded for it: a
// step redone and interrupted half way must not be skipped on the
// strength of the earlier run's fingerprint (its Verify would be the only
// guard).
func (r *run) prepare(steps []workflow.Step) []workflow.Step {
	for i := range steps {
		st := &steps[i]
		st.Deadline = r.deadlines[st.Name]
		run, name := st.Run, st.Name
		st.Run = func(ctx context.Context, rep *workflow.Reporter) error {
			r.update(func(s *State) { delete(s.Fingerprints, name) })
			return run(ctx, rep)
		}
	}
	return steps
}
