package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/zdnscloud/singlecloud/internal/wait"
	"github.com/zdnscloud/singlecloud/storage"
)

// Bounds of the replica's etcd calls.
const (
	// joinTimeout bounds creating the session and registering at start:
	// as the etcd lock at start did (lockTimeout).
	joinTimeout = lockTimeout
	// resignTimeout bounds giving up the leadership and revoking the
	// session at a clean stop: a stop must not hang on a gone etcd (the
	// lease then expires by itself within --leader-ttl).
	resignTimeout = 3 * time.Second
	// watchRetry is the pause before watching the leader again after the
	// watch broke (etcd unreachable): short, so that a follower learns the
	// new leader within a failover's few seconds.
	watchRetry = 500 * time.Millisecond
)

// replicaSet is this process's membership of the replicas of one etcd
// prefix: its session (a lease of --leader-ttl kept alive while it runs),
// its registration <prefix>.replicas/<lease> (which restore and migrate
// refuse to run beside), its campaign in the election <prefix>.election
// (whose value is the candidate's advertise URL) and the leader as last
// observed.
type replicaSet struct {
	client *clientv3.Client
	prefix string
	self   string
	log    *slog.Logger
	sess   *concurrency.Session
	el     *concurrency.Election
	// leader is the leader as last observed; nil before the first
	// observation.
	leader atomic.Pointer[leaderView]
	// elected is this replica's campaign once it has won it.
	elected atomic.Pointer[victory]
	// deposed is closed when, after this replica won, another key (or
	// none) is observed leading.
	deposed     chan struct{}
	deposedOnce sync.Once
}

// victory is a won campaign: its fence, and a revision at which it was
// already won (the campaign key is created before the older candidates'
// keys are gone, so an observation between shows the previous leader).
type victory struct {
	fence storage.Fence
	wonAt int64
}

// leaderView is one observation of the election.
type leaderView struct {
	key string // the leader's campaign key, "" for none
	url string // its advertise URL
	rev int64  // the revision observed at
}

func electionPrefix(prefix string) string { return prefix + ".election" }
func replicasPrefix(prefix string) string { return prefix + ".replicas/" }
func lockKeyPrefix(prefix string) string  { return prefix + ".lock/" }

// joinReplicas opens a session of ttl on db's connection and registers this
// replica, unless a restore or migrate holds the prefix's lock.
func joinReplicas(ctx context.Context, db *storage.Etcd, self string, ttl time.Duration, log *slog.Logger) (*replicaSet, error) {
	client, prefix := db.Client(), db.Prefix()
	sess, err := concurrency.NewSession(client, concurrency.WithTTL(int((ttl+time.Second-1)/time.Second)),
		concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, fmt.Errorf("etcd prefix %s: create the replica's session: %w", prefix, err)
	}
	r := &replicaSet{client: client, prefix: prefix, self: self, log: log, sess: sess,
		el: concurrency.NewElection(sess, electionPrefix(prefix)), deposed: make(chan struct{})}
	tctx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	regKey := fmt.Sprintf("%s%x", replicasPrefix(prefix), sess.Lease())
	resp, err := client.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(lockKeyPrefix(prefix)), "=", 0).WithPrefix()).
		Then(clientv3.OpPut(regKey, holderInfo()+" advertising "+self, clientv3.WithLease(sess.Lease()))).
		Commit()
	if err == nil && !resp.Succeeded {
		err = fmt.Errorf("%s holds the prefix's lock %s (a restore or migrate, or a singlecloud of an older release "+
			"that runs alone): wait for it to end, or stop it, then start again", lockHolder(tctx, client, prefix+".lock"),
			prefix+".lock")
	}
	if err != nil {
		r.leave()
		return nil, fmt.Errorf("etcd prefix %s: register the replica: %w", prefix, err)
	}
	return r, nil
}

// watchLeader keeps r.leader current until ctx ends: it reads the
// election's first-created key (the leader) and reads it again on every
// change under the election's prefix. It returns when ctx ends.
func (r *replicaSet) watchLeader(ctx context.Context) {
	for ctx.Err() == nil {
		err := r.watchOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("watching the leader failed; watching again", "error", err)
		if !wait.Sleep(ctx, watchRetry) {
			return
		}
	}
}

// watchOnce observes the leader until the watch breaks or ctx ends.
func (r *replicaSet) watchOnce(ctx context.Context) error {
	p := electionPrefix(r.prefix) + "/"
	rev, err := r.observe(ctx, p)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range r.client.Watch(wctx, p, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			return err
		}
		if _, err := r.observe(ctx, p); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// observe reads the leader and notes it; it returns the revision read at.
func (r *replicaSet) observe(ctx context.Context, p string) (int64, error) {
	gctx, cancel := context.WithTimeout(ctx, storage.DefaultEtcdRequestTimeout)
	defer cancel()
	resp, err := r.client.Get(gctx, p, clientv3.WithFirstCreate()...)
	if err != nil {
		return 0, fmt.Errorf("read the leader of %s: %w", p, err)
	}
	v := &leaderView{rev: resp.Header.Revision}
	if len(resp.Kvs) > 0 {
		v.key, v.url = string(resp.Kvs[0].Key), string(resp.Kvs[0].Value)
	}
	if old := r.leader.Swap(v); old == nil || old.key != v.key {
		r.log.Info("leader observed", "leader", leaderName(v.url, v.key))
	}
	if w := r.elected.Load(); w != nil && v.rev >= w.wonAt && v.key != w.fence.Key {
		r.deposedOnce.Do(func() { close(r.deposed) })
	}
	return resp.Header.Revision, nil
}

func leaderName(url, key string) string {
	switch {
	case key == "":
		return "none"
	case url == "":
		return "a replica without --advertise-url"
	}
	return url
}

// leaderURL is the leader's advertise URL as last observed, "" while none
// is known.
func (r *replicaSet) leaderURL() string {
	if v := r.leader.Load(); v != nil && v.key != "" {
		if v.url == "" {
			return noAdvertiseURL
		}
		return v.url
	}
	return ""
}

// noAdvertiseURL stands for a leader that advertises no URL: followers
// cannot forward to it.
const noAdvertiseURL = "(the leader has no --advertise-url: give every replica one)"

// campaign blocks until this replica leads or ctx ends, and returns the
// leadership's fence.
func (r *replicaSet) campaign(ctx context.Context) (storage.Fence, error) {
	if err := r.el.Campaign(ctx, r.self); err != nil {
		return storage.Fence{}, fmt.Errorf("campaign for the leadership of %s: %w", r.prefix, err)
	}
	f := storage.Fence{Key: r.el.Key(), CreateRevision: r.el.Rev()}
	gctx, cancel := context.WithTimeout(ctx, storage.DefaultEtcdRequestTimeout)
	defer cancel()
	resp, err := r.client.Get(gctx, f.Key)
	if err != nil {
		return storage.Fence{}, fmt.Errorf("confirm the leadership of %s: %w", r.prefix, err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != f.CreateRevision {
		return storage.Fence{}, fmt.Errorf("the leadership of %s was lost as it was won (the session expired): %w",
			r.prefix, storage.ErrNotLeader)
	}
	r.elected.Store(&victory{fence: f, wonAt: resp.Header.Revision})
	return f, nil
}

// lost is closed when the session ends: its lease expired (etcd
// unreachable for longer than --leader-ttl, or the process paused that
// long) or was revoked. The campaign key and the registration are gone
// with it.
func (r *replicaSet) lost() <-chan struct{} { return r.sess.Done() }

// leave resigns (if leading) and revokes the session, so that another
// replica leads at once; bounded by resignTimeout.
func (r *replicaSet) leave() {
	select {
	case <-r.sess.Done():
		return // nothing left to revoke
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
	defer cancel()
	if r.elected.Load() != nil {
		if err := r.el.Resign(ctx); err != nil && !errors.Is(err, context.Canceled) {
			r.log.Warn("resign the leadership", "error", err)
		}
	}
	_ = r.sess.Close()
}
