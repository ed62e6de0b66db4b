// Package eventrelay carries the leading replica's lifecycle events to the
// other replicas through etcd (issue 12), so that a follower serves the
// events websocket itself and its clients keep their stream across a
// failover: the leader writes each event of its bus under
// "<prefix>.events/", and each follower watches those keys and publishes
// what it sees on a bus of its own.
//
// Events are notifications, not state: they stay in etcd for Retention
// only (the leader deletes older ones as it writes), and a follower relays
// the events written after it started watching, as a websocket gets the
// events published after it connected.
package eventrelay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/pubsub"
)

const (
	// Retention is how long an event stays in etcd: long enough for a
	// follower's watch that broke for a moment to catch up.
	Retention = 30 * time.Second
	// flushInterval batches the events of a burst into one transaction.
	flushInterval = 100 * time.Millisecond
	// maxBatch keeps a transaction under etcd's default limit of 128
	// operations (the deletion of old events is one more).
	maxBatch = 100
	// writeTimeout bounds one write of a batch.
	writeTimeout = 5 * time.Second
	// retryPause is the pause before a follower watches again after its
	// watch broke.
	retryPause = 500 * time.Millisecond
)

// keyPrefix is where the events of the installation at prefix live.
func keyPrefix(prefix string) string { return prefix + ".events/" }

// eventKey orders events by the leader's clock, then by seq within it.
func eventKey(prefix string, t time.Time, seq uint64) string {
	return fmt.Sprintf("%s%020d-%08d", keyPrefix(prefix), t.UnixNano(), seq)
}

// Publish writes every event of sub (a subscription of the leader's bus,
// taken before the term publishes anything) to etcd under prefix until ctx
// ends or sub is closed, in batches, deleting the events older than
// Retention as it goes; it closes sub. A batch that cannot be written is
// logged and dropped: followers miss those events, the leader's own
// streams do not.
func Publish(ctx context.Context, c *clientv3.Client, prefix string, sub *pubsub.Subscription, log *slog.Logger) {
	defer sub.Close()
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	var (
		batch []pubsub.Event
		seq   uint64
	)
	flush := func() {
		for len(batch) > 0 {
			n := min(len(batch), maxBatch)
			now := time.Now()
			ops := make([]clientv3.Op, 0, n+1)
			ops = append(ops, clientv3.OpDelete(keyPrefix(prefix), clientv3.WithRange(eventKey(prefix, now.Add(-Retention), 0))))
			for _, ev := range batch[:n] {
				b, err := json.Marshal(ev)
				if err != nil {
					continue
				}
				seq++
				ops = append(ops, clientv3.OpPut(eventKey(prefix, now, seq), string(b)))
			}
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			_, err := c.Txn(wctx).Then(ops...).Commit()
			cancel()
			if err != nil && ctx.Err() == nil {
				log.Warn("events not relayed to the other replicas", "events", n, "error", err)
			}
			batch = batch[n:]
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			batch = append(batch, ev)
		case <-tick.C:
			flush()
		}
	}
}

// Follow publishes on bus every event written under prefix after it
// started, until ctx ends. A broken watch is watched again from where it
// broke (or from now, if etcd compacted that far).
func Follow(ctx context.Context, c *clientv3.Client, prefix string, bus *pubsub.Bus, log *slog.Logger) {
	rev := int64(0)
	for ctx.Err() == nil {
		if rev == 0 {
			gctx, cancel := context.WithTimeout(ctx, writeTimeout)
			resp, err := c.Get(gctx, keyPrefix(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
			cancel()
			if err == nil {
				rev = resp.Header.Revision
			}
		}
		if rev != 0 {
			var err error
			if rev, err = follow(ctx, c, prefix, rev, bus); err != nil && ctx.Err() == nil {
				log.Warn("relayed events: watching again", "error", err)
			}
		}
		t := time.NewTimer(retryPause)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// follow watches the events after rev and publishes them; it returns the
// revision to watch after next (0: from now on) and why it stopped.
func follow(ctx context.Context, c *clientv3.Client, prefix string, rev int64, bus *pubsub.Bus) (int64, error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.Watch(wctx, keyPrefix(prefix), clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			if wr.CompactRevision != 0 {
				return 0, err
			}
			return rev, err
		}
		for _, e := range wr.Events {
			rev = e.Kv.ModRevision
			if e.Type != clientv3.EventTypePut {
				continue
			}
			var ev pubsub.Event
			if json.Unmarshal(e.Kv.Value, &ev) == nil {
				bus.Publish(ev)
			}
		}
	}
	return rev, ctx.Err()
}
