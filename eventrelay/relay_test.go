package eventrelay

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

func client(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Events published on the leader's bus reach a follower's bus in order,
// whole; a follower gets the events written after it started, not the
// ones before; another installation's events (another prefix) do not
// reach it; the leader's writes leave no event older than Retention
// behind once newer ones are written.
func TestEventsReachTheFollowers(t *testing.T) {
	endpoint := etcdtest.Start(t).Endpoint
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	leaderBus, followerBus, otherBus := pubsub.New(pubsub.Options{}), pubsub.New(pubsub.Options{}), pubsub.New(pubsub.Options{})
	t.Cleanup(func() { leaderBus.Close(); followerBus.Close(); otherBus.Close() })
	lc, fc := client(t, endpoint), client(t, endpoint)
	done := make(chan struct{}, 3)
	leaderSub, otherSub := leaderBus.Subscribe(), otherBus.Subscribe()
	go func() { Publish(ctx, lc, "/a/", leaderSub, log); done <- struct{}{} }()
	go func() { Publish(ctx, lc, "/b/", otherSub, log); done <- struct{}{} }()

	leaderBus.Publish(pubsub.Event{Kind: pubsub.ClusterCreated, Cluster: "before"})
	waitFor(t, "the first event stored", func() bool {
		resp, err := lc.Get(ctx, keyPrefix("/a/"), clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == 1
	})
	sub := followerBus.Subscribe()
	defer sub.Close()
	go func() { Follow(ctx, fc, "/a/", followerBus, log); done <- struct{}{} }()
	// Probes until one comes through: the follower watches.
	waitFor(t, "the follower watching", func() bool {
		leaderBus.Publish(pubsub.Event{Kind: pubsub.ClusterCreated, Cluster: "probe"})
		select {
		case ev := <-sub.C():
			if ev.Cluster == "before" {
				t.Fatal("the event written before the follower started was relayed")
			}
			return true
		case <-time.After(flushInterval):
			return false
		}
	})

	const n = 250 // more than one batch
	for i := range n {
		leaderBus.Publish(pubsub.Event{Kind: pubsub.ClusterStatusChanged, Cluster: fmt.Sprint("c", i), Status: "Running",
			From: "Creating", Reason: "step 3/9", Time: time.Unix(int64(i), 0).UTC()})
		otherBus.Publish(pubsub.Event{Kind: pubsub.ClusterDeleted, Cluster: "other"})
		if i%50 == 0 {
			time.Sleep(flushInterval) // several batches, each with a deletion of old events
		}
	}
	for i := 0; i < n; {
		select {
		case ev := <-sub.C():
			if ev.Cluster == "probe" {
				continue // sent before the follower was seen watching
			}
			want := pubsub.Event{Kind: pubsub.ClusterStatusChanged, Cluster: fmt.Sprint("c", i), Status: "Running",
				From: "Creating", Reason: "step 3/9", Time: time.Unix(int64(i), 0).UTC()}
			if ev != want {
				t.Fatalf("event %d: got %+v, want %+v", i, ev, want)
			}
			i++
		case <-time.After(20 * time.Second):
			t.Fatalf("event %d of %d not relayed within 20 s", i, n)
		}
	}
	select {
	case ev := <-sub.C():
		if ev.Cluster != "probe" {
			t.Fatalf("an extra event was relayed: %+v", ev)
		}
	case <-time.After(5 * flushInterval):
	}

	// Old events are deleted by the next write after Retention.
	resp, err := lc.Get(ctx, keyPrefix("/a/"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count < n || resp.Count > n+100 { // the events, "before" and the probes
		t.Fatalf("%d events stored (err %v)", resp.Count, err)
	}
	_, err = lc.Put(ctx, eventKey("/a/", time.Now().Add(-2*Retention), 1), `{"type":"ClusterCreated","cluster":"stale"}`)
	if err != nil {
		t.Fatal(err)
	}
	leaderBus.Publish(pubsub.Event{Kind: pubsub.ClusterCreated, Cluster: "after"})
	stale := eventKey("/a/", time.Now().Add(-2*Retention), 1)
	waitFor(t, "the deletion of an event older than Retention", func() bool {
		resp, err := lc.Get(ctx, stale, clientv3.WithCountOnly())
		return err == nil && resp.Count == 0
	})
	cancel()
	for range 3 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Publish or Follow did not return after its context ended")
		}
	}
}

// waitFor polls cond until it holds, for at most 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The events a term published just before its bus closed are written
// (a term's last events reach the followers), and a write whose fence
// fails (the leadership is gone) writes nothing and ends Publish.
func TestPublishFlushesAtCloseAndStopsWhenFenced(t *testing.T) {
	endpoint := etcdtest.Start(t).Endpoint
	c := client(t, endpoint)
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	count := func(prefix string) int64 {
		resp, err := c.Get(ctx, keyPrefix(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	returned := func(done <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("Publish did not return %s", what)
		}
	}

	bus := pubsub.New(pubsub.Options{})
	done := make(chan struct{})
	sub := bus.Subscribe()
	go func() { Publish(ctx, c, "/closing/", sub, log); close(done) }()
	bus.Publish(pubsub.Event{Kind: pubsub.ClusterDeleted, Cluster: "last"})
	bus.Close()
	returned(done, "after its bus closed")
	if n := count("/closing/"); n != 1 {
		t.Errorf("%d events stored after the bus closed, want the last one", n)
	}

	fence := clientv3.Compare(clientv3.CreateRevision("/fenced/.election/gone"), "=", 42)
	bus = pubsub.New(pubsub.Options{})
	defer bus.Close()
	done = make(chan struct{})
	sub = bus.Subscribe()
	go func() { Publish(ctx, c, "/fenced/", sub, log, fence); close(done) }()
	bus.Publish(pubsub.Event{Kind: pubsub.ClusterCreated, Cluster: "stale"})
	returned(done, "once its fence failed")
	if n := count("/fenced/"); n != 0 {
		t.Errorf("%d events written by a replica whose leadership is gone", n)
	}
}
