package zke

import (
	"context"
	"fmt"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// ensure makes spec run on n (idempotent: an unchanged running container
// is left alone) and reports what it did.
func (r *run) ensure(ctx context.Context, rep *workflow.Reporter, n node, spec runtime.ContainerSpec) error {
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	action, err := d.Ensure(ctx, spec)
	if err != nil {
		return nodeErr(n, fmt.Errorf("container %s: %w", spec.Name, err), "")
	}
	if action != runtime.ActionNone {
		rep.Report(n.Name, fmt.Sprintf("%s %s", spec.Name, action))
	}
	return nil
}

// containerLogsHint returns the end of a container's log, to explain why
// a health gate failed.
func (r *run) containerLogsHint(ctx context.Context, n node, name string) string {
	d, err := r.docker(n)
	if err != nil {
		return ""
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	logs, err := d.ContainerLogs(lctx, name, 10)
	if err != nil || len(logs) == 0 {
		return fmt.Sprintf("see docker logs %s on the node", name)
	}
	return fmt.Sprintf("last lines of docker logs %s: %s", name, strings.TrimSpace(string(logs)))
}
