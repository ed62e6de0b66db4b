package zke

import "github.com/zdnscloud/singlecloud/zke/workflow"

// The step names, as shown in progress frames and checkpoints.
const (
	stepConnect      = "connect"
	stepPreflight    = "preflight"
	stepCertificates = "certificates"
	stepImages       = "images"
	stepEtcd         = "etcd"
	stepControlPlane = "controlplane"
	stepWorkers      = "workers"
	stepNetwork      = "network"
	stepAddons       = "addons"
	stepKubeconfig   = "kubeconfig"
	stepDrain        = "drain"
	stepClean        = "clean"
)

// createSteps is the create workflow (SPEC §6).
func (r *run) createSteps() []workflow.Step {
	return []workflow.Step{
		{Name: stepConnect, Run: r.connect},
		{Name: stepPreflight, Run: r.preflight},
		{Name: stepCertificates, Run: r.certificates},
		{Name: stepImages, Run: r.pullImages},
		{Name: stepEtcd, Run: r.etcd},
		{Name: stepControlPlane, Run: r.controlPlane},
		{Name: stepWorkers, Run: r.workers},
		{Name: stepNetwork, Run: r.network},
		{Name: stepAddons, Run: r.addons},
		{Name: stepKubeconfig, Run: r.writeKubeconfig},
	}
}

// updateSteps applies a changed node list: the create steps (idempotent:
// unchanged nodes see no change) with removed workers drained and cleaned
// before the kubeconfig is written back.
func (r *run) updateSteps() []workflow.Step {
	create := r.createSteps()
	last := len(create) - 1
	steps := append([]workflow.Step(nil), create[:last]...)
	steps = append(steps,
		workflow.Step{Name: stepDrain, Run: r.drainRemoved},
		workflow.Step{Name: stepClean, Run: r.cleanRemoved})
	return append(steps, create[last])
}

// removeSteps tears the cluster down.
func (r *run) removeSteps(force bool) []workflow.Step {
	return []workflow.Step{
		{Name: stepConnect, Run: r.connectForRemove(force)},
		{Name: stepClean, Run: r.cleanAll},
	}
}
