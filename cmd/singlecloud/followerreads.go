package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/applications"
	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/eventrelay"
	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/metrics"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
)

// mirroredBuckets are the buckets a follower answers reads from: the
// clusters, their operation history and installer logs, the users, the
// settings (the token signing secret), the hosts and their commands, the
// environments and the application instances with their logs.
var mirroredBuckets = []storage.Bucket{storage.BucketClusters, storage.BucketOperations, storage.BucketOperationLogs,
	storage.BucketUsers, storage.BucketSettings, storage.BucketHosts, storage.BucketHostCommands,
	storage.BucketEnvironments, storage.BucketApplications, storage.BucketApplicationLogs}

// followerReads is a replica's own copy of the store (a watch-fed mirror)
// and the API it answers reads with while it does not lead.
type followerReads struct {
	mirror  *storage.Mirror
	sealer  storage.Sealer
	self    string
	log     *slog.Logger
	meters  *metrics.Metrics
	clients *clustermanager.Follower
	// bus carries the leader's events relayed through etcd; the relay
	// runs until stop is called.
	bus   *pubsub.Bus
	stop  context.CancelFunc
	relay sync.WaitGroup

	mu sync.Mutex
	// api is built on first use, and again when the token secret
	// changes: a follower of a new installation starts before the first
	// leader has created the secret.
	api       *server.Follower
	secretRev int64
	// failedRev is the secret revision whose API could not be built (not
	// tried again until the secret changes); retired are the APIs built
	// for earlier secrets, whose streams end at close.
	failedRev int64
	retired   []*server.Follower
}

// startFollowerReads loads the mirror of db; it runs until ctx ends.
func startFollowerReads(ctx context.Context, db *storage.Etcd, self string, log *slog.Logger, meters *metrics.Metrics) (*followerReads, error) {
	m, err := storage.NewMirror(ctx, db, mirroredBuckets...)
	if err != nil {
		return nil, err
	}
	clusters, err := clustermanager.NewFollower(clustermanager.FollowerOptions{Store: m, Sealer: db.Sealer(), Clock: time.Now,
		Changed: m.Changed})
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	f := &followerReads{mirror: m, sealer: db.Sealer(), self: self, log: log, meters: meters, clients: clusters,
		bus: pubsub.New(pubsub.Options{})}
	relayCtx, stop := context.WithCancel(ctx)
	f.stop = stop
	f.relay.Add(1)
	go func() {
		defer f.relay.Done()
		eventrelay.Follow(relayCtx, db.Client(), db.Prefix(), f.bus, log.With("component", "follower"))
	}()
	f.relay.Add(1)
	go func() {
		defer f.relay.Done()
		f.revalidateStreams(relayCtx)
	}()
	return f, nil
}

// revalidateStreams ends, each time the copy of the store changes, the
// follower's streams whose user was deleted or changed password on the
// leader, until ctx ends: the leader ends its own at once, and a
// follower's within the copy's lag (a watch: well under a second).
func (f *followerReads) revalidateStreams(ctx context.Context) {
	changed := f.mirror.Changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		// The next change's channel before the streams are checked: a
		// change applied while they are checked (after a user was read)
		// closes it, and they are checked again.
		changed = f.mirror.Changed()
		f.mu.Lock()
		apis := append(append([]*server.Follower(nil), f.retired...), f.api)
		f.mu.Unlock()
		for _, api := range apis {
			if api != nil {
				api.Revalidate()
			}
		}
	}
}

// handler returns the follower's API, nil while no token secret is
// stored (no replica has led yet).
func (f *followerReads) handler() *server.Follower {
	rows, err := f.mirror.Rows(storage.BucketSettings, auth.SettingJWTSecret)
	var rev int64
	for _, r := range rows {
		if r.Key == auth.SettingJWTSecret {
			rev = r.ModRevision
		}
	}
	if err != nil || rev == 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.api != nil && f.secretRev == rev {
		return f.api
	}
	if f.failedRev == rev {
		return nil
	}
	api, err := f.build()
	if err != nil {
		f.failedRev = rev
		f.log.Warn("reads go to the leader: the follower's API could not be built", "error", err)
		return nil
	}
	if f.api != nil {
		f.retired = append(f.retired, f.api)
	}
	f.api, f.secretRev = api, rev
	return api
}

func (f *followerReads) build() (*server.Follower, error) {
	users, err := auth.NewUsers(f.mirror, auth.UsersOptions{})
	if err != nil {
		return nil, err
	}
	tokens, err := auth.NewTokensReader(f.mirror, f.sealer, time.Now)
	if err != nil {
		return nil, fmt.Errorf("load token secret: %w", err)
	}
	return server.NewFollower(server.FollowerOptions{Users: users, Tokens: tokens, Clusters: f.clients, Hosts: hosts.NewReads(f.mirror),
		Applications: applications.NewReads(f.mirror, clusterEnvironments{mgr: f.clients}), Bus: f.bus, Self: f.self,
		Logger: f.log.With("component", "follower"), Metrics: f.meters})
}

// close ends the follower's streams, the relay of events and the mirror;
// call it after the HTTP server has shut down.
func (f *followerReads) close() {
	f.mu.Lock()
	apis := append(f.retired, f.api)
	f.mu.Unlock()
	for _, api := range apis {
		if api != nil {
			api.Close()
		}
	}
	f.stop()
	f.relay.Wait()
	f.bus.Close()
	_ = f.mirror.Close()
}
