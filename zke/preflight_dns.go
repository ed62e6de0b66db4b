package zke

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// checkDNS reads worker n's resolver configuration (one command), records
// in n's facts which file its kubelet reads and the upstreams CoreDNS may
// forward to, and appends to problems what stops the install: a worker
// whose resolver configuration names no nameserver a pod can use, unless
// the cluster names its upstreams itself (clusterUpstreamDNS), when it is
// a warning. Other nodes run no kubelet and are passed over.
func (r *run) checkDNS(ctx context.Context, rep *workflow.Reporter, n node, problems *[]string) error {
	if !n.HasRole(model.RoleWorker) {
		return nil
	}
	c, err := r.client(n)
	if err != nil {
		return err
	}
	res, err := c.Exec(ctx, resolvScript(), transport.ExecOptions{})
	if err != nil {
		return nodeErr(n, fmt.Errorf("read the resolver configuration: %w", err), "")
	}
	d := decideDNS(n.Name, parseResolvOutput(string(res.Stdout)))
	r.mu.Lock()
	nf := r.facts[n.Name]
	nf.dns = d
	r.facts[n.Name] = nf
	r.mu.Unlock()
	switch {
	case d.problem != "" && len(r.cfg.ClusterUpstreamDNS) > 0:
		rep.Warnf(n.Name, "%s (CoreDNS forwards to clusterUpstreamDNS, but pods with dnsPolicy Default get this resolver)", d.problem)
	case d.problem != "":
		*problems = append(*problems, d.problem)
	default:
		rep.Logf(n.Name, "the kubelet reads %s; its upstream DNS servers: %s", d.resolvConf, strings.Join(d.upstreams, ", "))
	}
	return nil
}

// kubeletResolvConf is the file n's kubelet reads as its resolver
// configuration: what preflight chose, /etc/resolv.conf before it ran.
func (r *run) kubeletResolvConf(n node) string {
	if p := r.factsOf(n).dns.resolvConf; p != "" {
		return p
	}
	return etcResolvConf
}

// resolvBinds are the binds that give n's kubelet container the file
// kubeletResolvConf names, read-only at the same path, beyond the
// /etc/resolv.conf it always has.
func (r *run) resolvBinds(n node) []string {
	if r.kubeletResolvConf(n) != systemdResolvConf {
		return nil
	}
	return []string{systemdResolvDir + ":" + systemdResolvDir + ":ro"}
}

// dnsUpstreams are the servers CoreDNS forwards to: clusterUpstreamDNS
// when the cluster names them, otherwise every worker's usable
// nameservers (preflight's, in node order, each once, at most
// maxForwardUpstreams). Never a loopback address: in CoreDNS's pod that
// is CoreDNS itself. Empty only before preflight has run.
func (r *run) dnsUpstreams() []string {
	if len(r.cfg.ClusterUpstreamDNS) > 0 {
		return r.cfg.ClusterUpstreamDNS
	}
	var out []string
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		for _, u := range r.factsOf(n).dns.upstreams {
			if !slices.Contains(out, u) && len(out) < maxForwardUpstreams {
				out = append(out, u)
			}
		}
	}
	return out
}
