package zke

import (
	"context"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

const (
	// apiServerShutdownDelay is how long a kube-apiserver behind the
	// shared endpoint keeps serving after SIGTERM with /readyz failing:
	// more than haproxy's two failed checks a second apart, so that it
	// is out of the backend before it stops listening.
	apiServerShutdownDelay = 5 * time.Second
	// apiServerStopGrace is how long docker waits after SIGTERM before
	// it kills the API server: the delay, then the in-flight requests'
	// drain.
	apiServerStopGrace = apiServerShutdownDelay + 15*time.Second
)

// drainAPIServer stops n's kube-apiserver gracefully when the cluster has
// a shared endpoint, so that the load balancer moves the API's clients to
// the other control-plane nodes before this one goes (a restart or a
// replaced spec then costs no request). Without a shared endpoint there
// is nothing to move clients to and it does nothing.
func (r *run) drainAPIServer(ctx context.Context, rep *workflow.Reporter, n node) error {
	if !r.sharedEndpoint() {
		return nil
	}
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	if err := d.Stop(ctx, containerAPIServer, apiServerStopGrace); err != nil {
		return nodeErr(n, fmt.Errorf("stop %s gracefully: %w", containerAPIServer, err), "")
	}
	rep.Report(n.Name, "kube-apiserver drained from the shared endpoint and stopped")
	return nil
}
