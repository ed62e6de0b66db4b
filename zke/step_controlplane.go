package zke

import (
	"context"
	"fmt"
	"net/url"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// controlPlane runs kube-apiserver, kube-controller-manager and
// kube-scheduler on every controlplane node, each gated on its health
// endpoint, reached through the node's SSH connection with client
// certificates.
func (r *run) controlPlane(ctx context.Context, rep *workflow.Reporter) error {
	cps := withRole(r.nodes, model.RoleControlPlane)
	for _, n := range cps {
		if err := r.ensureEndpoint(ctx, rep, n); err != nil {
			return err
		}
	}
	for i, n := range cps {
		spec := r.apiServerSpec(n)
		current, err := r.upToDate(ctx, n, spec)
		if err != nil {
			return err
		}
		if !current {
			// A replaced spec (an update, an upgrade) drains first.
			if err := r.drainAPIServer(ctx, rep, n); err != nil {
				return err
			}
		}
		if err := r.ensure(ctx, rep, n, spec); err != nil {
			return err
		}
		apiServer := pathLink{container: containerAPIServer, what: "kube-apiserver /readyz", probe: func(ctx context.Context) (bool, error) {
			return r.apiServerReady(ctx, n)
		}}
		if err := r.waitPath(ctx, rep, n, apiServerReadyTimeout, "kube-apiserver on "+n.Name+" ready", []pathLink{apiServer}); err != nil {
			return r.pathErr(ctx, n, err, containerAPIServer)
		}
		rep.Advance(float64(2*i+1)/float64(2*len(cps)), n.Name, "kube-apiserver ready")
		for _, c := range []struct {
			spec runtime.ContainerSpec
			port int
		}{
			{r.controllerManagerSpec(n), portControllerManager},
			{r.schedulerSpec(n), portScheduler},
		} {
			if err := r.ensure(ctx, rep, n, c.spec); err != nil {
				return err
			}
			component := pathLink{container: c.spec.Name, what: c.spec.Name + " /healthz", probe: func(ctx context.Context) (bool, error) {
				return r.localHealthz(ctx, n, c.port)
			}}
			if err := r.waitPath(ctx, rep, n, componentHealthTimeout, c.spec.Name+" on "+n.Name+" healthy", []pathLink{apiServer, component}); err != nil {
				return r.pathErr(ctx, n, err, c.spec.Name)
			}
		}
		rep.Advance(float64(2*i+2)/float64(2*len(cps)), n.Name, "control plane healthy")
	}
	return r.endpointReady(ctx, rep, cps[0])
}

// apiServerReady asks n's kube-apiserver for /readyz as the admin.
func (r *run) apiServerReady(ctx context.Context, n node) (bool, error) {
	return r.apiServerReadyAt(ctx, n, "https://"+hostPort(n.InternalAddress, portAPIServer))
}

// apiServerReadyAt asks the API server at server (a node's own, or the
// shared endpoint) for /readyz as zke's super-admin, through n's SSH
// connection.
func (r *run) apiServerReadyAt(ctx context.Context, n node, server string) (bool, error) {
	u, err := url.Parse(server)
	if err != nil {
		return false, err
	}
	tlsCfg, err := r.clientTLS(r.superAdmin(), pki.KindClusterCA, u.Hostname())
	if err != nil {
		return false, err
	}
	hc, err := r.tunnelClient(n, tlsCfg)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := httpDo(ctx, hc, "GET", server+"/readyz", ""); err != nil {
		return false, err
	}
	return true, nil
}

// localHealthz asks a component bound to n's 127.0.0.1 for /healthz. Its
// serving certificate is self-signed by the component, so only the
// answer is checked, not the certificate: the connection never leaves the
// node.
func (r *run) localHealthz(ctx context.Context, n node, port int) (bool, error) {
	hc, err := r.tunnelClient(n, insecureLoopbackTLS())
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	body, err := httpDo(ctx, hc, "GET", "https://"+hostPort("127.0.0.1", port)+"/healthz", "")
	if err != nil {
		return false, err
	}
	if string(body) != "ok" {
		return false, fmt.Errorf("healthz answered %q", body)
	}
	return true, nil
}

// localHTTPHealthz asks a component serving plain HTTP on n's 127.0.0.1
// (kube-proxy) for /healthz.
func (r *run) localHTTPHealthz(ctx context.Context, n node, port int) (bool, error) {
	hc, err := r.tunnelClient(n, nil)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := httpDo(ctx, hc, "GET", "http://"+hostPort("127.0.0.1", port)+"/healthz", ""); err != nil {
		return false, err
	}
	return true, nil
}
