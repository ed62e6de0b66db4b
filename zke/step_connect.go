package zke

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// connect opens one SSH connection per node (bounded dial, retries, host
// keys pinned on first contact) and checks the node's Docker Engine.
func (r *run) connect(ctx context.Context, rep *workflow.Reporter) error {
	return workflow.ForEach(ctx, r.nodes, nodeConcurrency, func(ctx context.Context, n node) error {
		return r.connectNode(ctx, rep, n)
	})
}

// connectForRemove is connect for a delete: with force, a node that cannot
// be reached is reported and skipped.
func (r *run) connectForRemove(force bool) func(ctx context.Context, rep *workflow.Reporter) error {
	return func(ctx context.Context, rep *workflow.Reporter) error {
		err := workflow.ForEach(ctx, r.nodes, nodeConcurrency, func(ctx context.Context, n node) error {
			err := r.connectNode(ctx, rep, n)
			if err != nil && force && ctx.Err() == nil {
				rep.Warnf(n.Name, "skipped (force): %v", err)
				return nil
			}
			return err
		})
		if err != nil && !force {
			return fmt.Errorf("%w; to delete the cluster anyway and leave these hosts as they are, delete with force", err)
		}
		return err
	}
}

func (r *run) connectNode(ctx context.Context, rep *workflow.Reporter, n node) error {
	signer, err := transport.ParsePrivateKey([]byte(r.cfg.SSHKey))
	if err != nil {
		return workflow.UserFixable(nodeErr(n, err, "set the cluster's sshKey to an unencrypted private key"))
	}
	r.mu.Lock()
	pinned := r.state.HostKeys[n.Address]
	r.mu.Unlock()
	c, err := r.in.dialer.Dial(ctx, transport.Target{
		Node: n.Name, Address: n.Address, Port: int(n.SSHPort), User: n.SSHUser, Signer: signer, HostKey: pinned,
	})
	if err != nil {
		if errors.Is(err, transport.ErrAuthFailed) || errors.Is(err, transport.ErrHostKeyMismatch) || errors.Is(err, transport.ErrUnreachable) {
			err = workflow.UserFixable(err)
		}
		return nodeErr(n, err, "")
	}
	d, err := runtime.New(c, n.DockerSocket, runtime.Options{Node: n.Name, Cluster: r.cfg.Name, Logger: r.in.log.With("node", n.Name)})
	if err != nil {
		_ = c.Close()
		return nodeErr(n, err, "")
	}
	info, err := d.Ping(ctx)
	if err != nil {
		_ = d.Close()
		_ = c.Close()
		return workflow.UserFixable(nodeErr(n, fmt.Errorf("docker at %s: %w", n.DockerSocket, err),
			"start Docker on "+n.Name+", or set "+r.nodeField(n, "dockerSocket")+" to the socket it listens on"))
	}
	r.mu.Lock()
	if old, ok := r.dockers[n.Name]; ok {
		_ = old.Close()
	}
	if old, ok := r.clients[n.Name]; ok {
		_ = old.Close()
	}
	r.clients[n.Name] = c
	r.dockers[n.Name] = d
	f := r.facts[n.Name]
	f.docker = info
	r.facts[n.Name] = f
	if pinned == "" {
		r.state.HostKeys[n.Address] = c.HostKey()
	}
	r.mu.Unlock()
	if paths, ok := earlierRelease(r.snapshot(), n); ok {
		rep.Logf(n.Name, "installed by an earlier release, which kept no record of its paths: zke takes those of the node's roles as its own: %s", strings.Join(paths, ", "))
	}
	rep.Report(n.Name, fmt.Sprintf("connected as %s (docker %s)", n.SSHUser, info.Version))
	return nil
}
