package storage

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNotLeader reports a write of a fenced store refused because the
// leadership it was conditioned on has ended: the leader key is gone (its
// lease expired or was revoked) or belongs to another campaign. Nothing of
// that write was applied; the replica must stop acting as the leader.
var ErrNotLeader = errors.New("not the leader any more")

// Fence is a leadership, as an etcd election reports it: the key of the
// leader's campaign and the revision that created it. A key recreated by a
// later campaign has another create revision, so it does not pass.
type Fence struct {
	Key            string
	CreateRevision int64
}

// etcdFence is the fence of a fenced view and the signal of its end.
type etcdFence struct {
	Fence
	once sync.Once
	out  chan struct{} // closed by the first write refused by the fence
}

// Fenced returns a view of e that reads as e does but commits every write
// only while f's key exists with f's create revision: one etcd transaction
// holds that comparison with the write's own, so a leader that was paused
// past its lease and resumed after another was elected cannot write
// anything. A refused write fails with ErrNotLeader and writes nothing,
// and closes FencedOut. The view shares e's connection: closing it does
// not close e, closing e closes it.
func (e *Etcd) Fenced(f Fence) (*Etcd, error) {
	if f.Key == "" || f.CreateRevision <= 0 {
		return nil, fmt.Errorf("fence etcd prefix %s: a fence needs the leader key and its create revision (got %q at %d)",
			e.opts.Prefix, f.Key, f.CreateRevision)
	}
	root := e
	if e.parent != nil {
		root = e.parent
	}
	ctx, cancel := context.WithCancel(root.ctx)
	return &Etcd{
		client: root.client,
		opts:   root.opts,
		sealer: root.sealer,
		ctx:    ctx,
		cancel: cancel,
		fence:  &etcdFence{Fence: f, out: make(chan struct{})},
		parent: root,
	}, nil
}

// FencedOut is closed once a write of this fenced view has been refused
// with ErrNotLeader; nil (never ready) for an Etcd that is not fenced.
func (e *Etcd) FencedOut() <-chan struct{} {
	if e.fence == nil {
		return nil
	}
	return e.fence.out
}

// maxCompares is how many comparisons of what a transaction read fit in
// one commit beside the fence's.
func (e *Etcd) maxCompares() int {
	if e.fence != nil {
		return e.opts.MaxTxnOps - 1
	}
	return e.opts.MaxTxnOps
}

// fenceCompares is the fence's condition (none for an Etcd not fenced).
func (e *Etcd) fenceCompares() []clientv3.Cmp {
	if e.fence == nil {
		return nil
	}
	return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(e.fence.Key), "=", e.fence.CreateRevision)}
}

// fenceElse reads the fence's key in a commit's Else branch, so that a
// failed commit tells a lost leadership from a conflict.
func (e *Etcd) fenceElse() []clientv3.Op {
	if e.fence == nil {
		return nil
	}
	return []clientv3.Op{clientv3.OpGet(e.fence.Key)}
}

// fencedOut reads the Else branch of a failed commit: ErrNotLeader if the
// fence's key is gone or was recreated, else nil (a conflict).
func (e *Etcd) fencedOut(resp *clientv3.TxnResponse) error {
	if e.fence == nil || resp.Succeeded || len(resp.Responses) == 0 {
		return nil
	}
	if rev := createRevision(resp.Responses[0]); rev != e.fence.CreateRevision {
		e.fence.once.Do(func() { close(e.fence.out) })
		holder := "nobody holds it"
		if rev != 0 {
			holder = fmt.Sprintf("another campaign holds it since revision %d", rev)
		}
		return fmt.Errorf("etcd prefix %s: write refused: the leader key %s of revision %d is gone (%s): this replica "+
			"no longer leads, nothing was written: %w", e.opts.Prefix, e.fence.Key, e.fence.CreateRevision, holder, ErrNotLeader)
	}
	return nil
}

func createRevision(r *etcdserverpb.ResponseOp) int64 {
	rr := r.GetResponseRange()
	if rr == nil || len(rr.Kvs) == 0 {
		return 0
	}
	return rr.Kvs[0].CreateRevision
}
