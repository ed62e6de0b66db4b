package zke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// snapshotTimeout bounds streaming one etcd snapshot: the whole keyspace
// of a large etcd (its 8 GiB quota) over SSH takes minutes.
const snapshotTimeout = 15 * time.Minute

// ErrNoEtcdState refuses a snapshot of a cluster zke has not installed:
// without its certificates there is no way into its etcd.
var ErrNoEtcdState = errors.New("the cluster has no etcd certificates yet: it was never installed by singlecloud")

// SaveSnapshot stores the snapshot stream r, taken from the etcd member
// on node member; it must read r to its end (or fail).
type SaveSnapshot func(ctx context.Context, member string, r io.Reader) error

// Snapshot takes a snapshot of the cluster's etcd (etcd's own
// Maintenance.Snapshot, a consistent copy of its database) and hands the
// stream to save. It asks the etcd members of cfg in config order and
// takes the snapshot from the first one that answers healthy, through that
// node's SSH connection, as the API server's etcd client. prev is the
// cluster's state (its certificates and pinned host keys). Progress and
// log lines go to sink like any run's; the snapshot's bytes go only to
// save.
func (in *Installer) Snapshot(ctx context.Context, cfg model.ClusterConfig, prev State, sink Sink, save SaveSnapshot) error {
	if prev.PKI == nil {
		return workflow.UserFixable(ErrNoEtcdState)
	}
	r, err := in.newRun(cfg, prev, sink)
	if err != nil {
		return err
	}
	defer r.close()
	steps := r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connectEtcd},
		{Name: stepSnapshot, Run: func(ctx context.Context, rep *workflow.Reporter) error {
			return r.snapshotTo(ctx, rep, save)
		}},
	})
	return workflow.Run(ctx, steps, snapshotSink{r.sink}, workflow.RunOptions{Clock: in.clock})
}

// snapshotSink passes progress, log and stalls on; a snapshot changes no
// state, so it has no checkpoints.
type snapshotSink struct{ s Sink }

func (s snapshotSink) Progress(p workflow.Progress)                     { s.s.Progress(p) }
func (s snapshotSink) Log(l workflow.Line)                              { s.s.Log(l) }
func (s snapshotSink) Stalled(st workflow.Stall)                        { s.s.Stalled(st) }
func (s snapshotSink) Checkpoint(context.Context, string, string) error { return nil }

// connectEtcd opens the SSH connections of the etcd members only.
func (r *run) connectEtcd(ctx context.Context, rep *workflow.Reporter) error {
	return workflow.ForEach(ctx, withRole(r.nodes, model.RoleEtcd), nodeConcurrency, func(ctx context.Context, n node) error {
		return r.connectNode(ctx, rep, n)
	})
}

// snapshotTo finds a healthy member and hands its snapshot to save.
func (r *run) snapshotTo(ctx context.Context, rep *workflow.Reporter, save SaveSnapshot) error {
	var names []string
	for _, n := range withRole(r.nodes, model.RoleEtcd) {
		names = append(names, n.Name)
	}
	m, err := r.healthyEtcdMember(ctx, names)
	if err != nil {
		return err
	}
	rep.Logf(m.Name, "taking an etcd snapshot from %s", m.Name)
	cli, err := r.etcdClient(ctx, m)
	if err != nil {
		return nodeErr(m, err, "")
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		return nodeErr(m, fmt.Errorf("etcd snapshot: %w", err), "")
	}
	defer rc.Close()
	cr := &countingReader{r: rc}
	if err := save(ctx, m.Name, cr); err != nil {
		if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			err = fmt.Errorf("not finished within %s: %w", snapshotTimeout, err)
		}
		return nodeErr(m, fmt.Errorf("etcd snapshot: after %d bytes: %w", cr.n, err),
			"check the etcd member's health and the network between singlecloud and "+m.Name)
	}
	rep.Logf(m.Name, "etcd snapshot of %d bytes taken from %s", cr.n, m.Name)
	return nil
}

// countingReader counts the bytes read through it, for messages.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// etcdClient is an etcd client of member m whose connections are opened
// from m through its SSH connection, authenticated as the API server.
func (r *run) etcdClient(ctx context.Context, m node) (*clientv3.Client, error) {
	tlsCfg, err := r.clientTLS(pki.ID(pki.KindAPIServerEtcdClient), pki.KindEtcdCA, m.InternalAddress)
	if err != nil {
		return nil, err
	}
	c, err := r.client(m)
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{etcdClientURL(m)},
		TLS:         tlsCfg,
		DialTimeout: probeTimeout,
		Context:     ctx,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return c.DialContext(ctx, "tcp", addr)
		})},
	})
}
