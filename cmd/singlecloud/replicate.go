package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/eventrelay"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/storage"
)

// replicaRun is run's part for --store etcd: the front handler, and the
// follow → campaign → lead life of one replica.
type replicaRun struct {
	cfg  config
	log  *slog.Logger
	deps termDeps
	rs   *replicaSet
	db   *storage.Etcd
	// reads answers reads from the replica's own copy of the store while
	// it follows.
	reads *followerReads
	// local is the API of the term this replica leads with, nil while it
	// does not lead (or has not loaded yet).
	local atomic.Pointer[http.Handler]
}

// frontHandler serves /healthz, /readyz and /version itself and the rest
// through the term while leading, else forwards it to the leader.
func (r *replicaRun) frontHandler() (http.Handler, error) {
	return server.NewReplica(server.ReplicaOptions{
		Version: buildVersion(),
		Self:    r.cfg.Etcd.AdvertiseURL,
		Leader:  r.rs.leaderURL,
		Local: func() http.Handler {
			if h := r.local.Load(); h != nil {
				return *h
			}
			return nil
		},
		Reads:  r.reads.handler,
		Sync:   r.reads.mirror.Sync,
		TLS:    forwardTLS(r.cfg),
		Sealer: r.db.Sealer(),
		Logger: r.log.With("component", "replica"),
		Ready: []server.ReadinessCheck{
			{Name: "store", Check: func(context.Context) error {
				_, err := r.db.Get(storage.BucketSettings, storage.SettingSchemaVersion)
				return err
			}},
			{Name: "leader", Check: func(context.Context) error {
				switch leader := r.rs.leaderURL(); {
				case leader == "":
					return errors.New("no replica leads")
				case (r.rs.elected.Load() != nil || leader == r.cfg.Etcd.AdvertiseURL) && r.local.Load() == nil:
					return errors.New("this replica leads but has not loaded its state yet")
				}
				return nil
			}},
		},
	})
}

// replicate follows the leader and campaigns until this replica leads,
// then leads until ctx ends (nil) or the leadership or the session is lost,
// or the HTTP server fails (an error). Before it returns, the term it led
// with has stopped.
func (r *replicaRun) replicate(ctx context.Context, serveErr <-chan error) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.rs.watchLeader(watchCtx)
	}()

	type won struct {
		fence storage.Fence
		err   error
	}
	elected := make(chan won, 1)
	campaignCtx, stopCampaign := context.WithCancel(ctx)
	defer stopCampaign()
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, err := r.rs.campaign(campaignCtx)
		elected <- won{f, err}
	}()
	r.log.Info("following; campaigning for the leadership", "advertise", r.cfg.Etcd.AdvertiseURL, "ttl", r.cfg.Etcd.LeaderTTL.String())
	var w won
	select {
	case <-ctx.Done():
		r.log.Info("shutting down")
		return nil
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-r.rs.lost():
		return fmt.Errorf("lost this replica's etcd session (etcd unreachable for longer than --leader-ttl %s, or its "+
			"lease revoked): stopping; start it again once etcd is reachable", r.cfg.Etcd.LeaderTTL)
	case w = <-elected:
	}
	if w.err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return w.err
	}
	return r.lead(ctx, w.fence, serveErr)
}

// lead runs a term on a store fenced by f until ctx ends or the
// leadership is lost; the term has stopped when it returns.
func (r *replicaRun) lead(ctx context.Context, f storage.Fence, serveErr <-chan error) error {
	log := r.log.With("leader_key", f.Key)
	log.Info("elected leader; loading", "revision", f.CreateRevision)
	// The fenced view is not closed here: requests the term's handler
	// took before the step-down may still use it until the HTTP server
	// has shut down; their writes are refused (ErrNotLeader, a 503). It
	// closes with the store.
	fenced, err := r.db.Fenced(f)
	if err != nil {
		return err
	}
	deps := r.deps
	deps.db = fenced
	deps.leader, deps.self, deps.replicaSealer = r.rs.leaderURL, r.cfg.Etcd.AdvertiseURL, r.db.Sealer()
	// The term's events go to the followers' event streams through etcd
	// until the term's bus closes (t.stop, after its workers stopped, so
	// that their last events go too) or this function returns; each write
	// is fenced by the leadership.
	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	var relays sync.WaitGroup
	defer func() {
		stopRelay()
		relays.Wait()
	}()
	deps.onBus = func(bus *pubsub.Bus) {
		sub := bus.Subscribe()
		relays.Add(1)
		go func() {
			defer relays.Done()
			eventrelay.Publish(relayCtx, r.db.Client(), r.db.Prefix(), sub, log,
				clientv3.Compare(clientv3.CreateRevision(f.Key), "=", f.CreateRevision))
		}()
	}
	t, err := startTerm(ctx, deps)
	if err != nil {
		if errors.Is(err, storage.ErrNotLeader) {
			return fmt.Errorf("lost the leadership while loading: %w; stopping, start again to follow the new leader", err)
		}
		return err
	}
	h := t.handler
	r.local.Store(&h)
	log.Info("leading")
	var result error
	select {
	case <-ctx.Done():
		log.Info("shutting down; resigning the leadership")
	case err := <-serveErr:
		result = fmt.Errorf("serve: %w", err)
	case <-r.rs.lost():
		result = fmt.Errorf("lost the leadership: this replica's etcd lease expired (etcd unreachable, or the process "+
			"paused, for longer than --leader-ttl %s) or was revoked", r.cfg.Etcd.LeaderTTL)
	case <-r.rs.deposed:
		result = errors.New("lost the leadership: another replica leads (this one's campaign key is gone)")
	case <-fenced.FencedOut():
		result = fmt.Errorf("lost the leadership: etcd refused a write, the leader key being gone: %w", storage.ErrNotLeader)
	}
	// Requests now go to the leader (or get 503) and the workers stop
	// before run resigns: nothing of this term runs beside the next.
	r.local.Store(nil)
	t.stop()
	// Nothing of the term runs any more: the next leader may start now,
	// while the HTTP server finishes the requests in flight (their writes
	// are fenced out).
	r.rs.leave()
	if result != nil {
		result = fmt.Errorf("%w: stopped the cluster workers and exiting so that a supervisor restarts this "+
			"replica as a follower", result)
		log.Error("stepped down", "error", result)
	}
	return result
}
