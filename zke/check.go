package zke

import (
	"context"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Check runs what a create of cfg checks before it changes anything —
// connect (SSH, the Docker Engine) and preflight (OS, resources, clock,
// ports, runtimes and every other check preflight has) — and nothing
// else: no file, container or setting on the hosts changes. hostKeys pins
// the nodes' SSH host keys by address (those a host registry keeps); an
// address without one is trusted on first contact for this check only.
// The error lists every node's problems at once, each with what to do;
// the log and warnings go to sink.
func (in *Installer) Check(ctx context.Context, cfg model.ClusterConfig, hostKeys map[string]string, sink Sink) error {
	r, err := in.newRun(cfg, State{HostKeys: hostKeys}, sink)
	if err != nil {
		return err
	}
	defer r.close()
	steps := r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connect},
		{Name: stepPreflight, Run: r.preflight},
	})
	return workflow.Run(ctx, steps, r.workflowSink(), workflow.RunOptions{Clock: in.clock})
}
