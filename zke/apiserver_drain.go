package zke

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
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
	// haproxyRiseWindow is how long an API server must have answered
	// ready before haproxy (two good checks a second apart) is sure to
	// send it clients again.
	haproxyRiseWindow = 3 * time.Second
)

// drainAPIServer stops n's kube-apiserver gracefully when the cluster has
// a shared endpoint, so that the load balancer moves the API's clients to
// the other control-plane nodes before this one goes (a restart or a
// replaced spec then costs no request): first it waits until another
// control-plane node's API server has served long enough for haproxy to
// use it (the one restarted just before may not be back in yet). Without
// a shared endpoint there is nothing to move clients to and it does
// nothing.
func (r *run) drainAPIServer(ctx context.Context, rep *workflow.Reporter, n node) error {
	if !r.sharedEndpoint() {
		return nil
	}
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	info, err := d.Inspect(ctx, containerAPIServer)
	if errors.Is(err, runtime.ErrNotFound) || (err == nil && !info.Running) {
		return nil
	}
	if err != nil {
		return nodeErr(n, fmt.Errorf("inspect %s: %w", containerAPIServer, err), "")
	}
	if err := r.anotherServes(ctx, rep, n); err != nil {
		return err
	}
	if err := d.Stop(ctx, containerAPIServer, apiServerStopGrace); err != nil {
		return nodeErr(n, fmt.Errorf("stop %s gracefully: %w", containerAPIServer, err), "")
	}
	rep.Report(n.Name, "kube-apiserver drained from the shared endpoint and stopped")
	return nil
}

// anotherServes waits (bounded) until an API server of another
// control-plane node than n has answered ready for haproxyRiseWindow.
// Only nodes whose API server container runs count: a node an update is
// adding has none yet (it comes later in the same step), and when no
// other runs there is nothing to move clients to.
func (r *run) anotherServes(ctx context.Context, rep *workflow.Reporter, n node) error {
	var others []node
	for _, o := range withRole(r.nodes, model.RoleControlPlane) {
		if o.Name == n.Name {
			continue
		}
		d, err := r.docker(o)
		if err != nil {
			return err
		}
		info, err := d.Inspect(ctx, containerAPIServer)
		if errors.Is(err, runtime.ErrNotFound) {
			continue
		}
		if err != nil {
			return nodeErr(o, fmt.Errorf("inspect %s: %w", containerAPIServer, err), "")
		}
		if info.Running {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		return nil
	}
	var since time.Time
	err := pollEvery(ctx, waitOn{rep: rep, node: n.Name}, haproxyRiseWindow/6, apiServerReadyTimeout,
		"another control-plane node's kube-apiserver serving before the one on "+n.Name+" stops", func(ctx context.Context) (bool, error) {
			var last error
			for _, o := range others {
				ok, err := r.apiServerReady(ctx, o)
				if ok {
					if since.IsZero() {
						since = r.in.clock()
					}
					return r.in.clock().Sub(since) >= haproxyRiseWindow, nil
				}
				last = err
			}
			since = time.Time{}
			return false, last
		})
	if err != nil {
		return workflow.UserFixable(nodeErr(n, err, "every other control-plane node's kube-apiserver is down: stopping this one would take the API away; bring one back, then retry"))
	}
	return nil
}
