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
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/internal/wait"
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

// maxQueue bounds the events waiting for their write: past it (etcd
// slower than the events for a long while) the newest are dropped, and
// counted in the log.
const maxQueue = 10000

// Publish writes every event of sub (a subscription of the leader's bus,
// taken before the term publishes anything) to etcd under prefix until
// ctx ends or sub is closed, in batches, deleting the events older than
// Retention as it goes; it closes sub. The events received before sub
// closed are written (within writeTimeout), so a term's last events reach
// the followers. Each write is conditioned on fence (the leadership's
// compare): once it fails, this replica no longer leads and Publish
// returns. A batch that cannot be written is logged and dropped: followers
// miss those events, the leader's own streams do not.
func Publish(ctx context.Context, c *clientv3.Client, prefix string, sub *pubsub.Subscription, log *slog.Logger, fence ...clientv3.Cmp) {
	q := &queue{}
	received := make(chan struct{})
	go func() {
		defer close(received)
		for ev := range sub.C() {
			q.add(ev)
		}
	}()
	defer func() {
		sub.Close()
		<-received
	}()
	w := writer{c: c, prefix: prefix, fence: fence, log: log}
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-received:
			// The bus closed: write what it sent, on a bound of its own.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
			w.write(fctx, q)
			cancel()
			return
		case <-tick.C:
			if !w.write(ctx, q) {
				return
			}
		}
	}
}

// queue holds the events received and not written yet.
type queue struct {
	mu      sync.Mutex
	events  []pubsub.Event
	dropped int
}

func (q *queue) add(ev pubsub.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.events) >= maxQueue {
		q.dropped++
		return
	}
	q.events = append(q.events, ev)
}

// take removes and returns up to n events, and how many were dropped
// since the last take.
func (q *queue) take(n int) ([]pubsub.Event, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = min(n, len(q.events))
	out := q.events[:n:n]
	q.events = q.events[n:]
	dropped := q.dropped
	q.dropped = 0
	return out, dropped
}

// writer writes batches of events.
type writer struct {
	c      *clientv3.Client
	prefix string
	fence  []clientv3.Cmp
	log    *slog.Logger
	seq    uint64
}

// write writes the queued events; it reports false once the fence
// failed (this replica no longer leads).
func (w *writer) write(ctx context.Context, q *queue) bool {
	for {
		batch, dropped := q.take(maxBatch)
		if dropped > 0 {
			w.log.Warn("events not relayed to the other replicas: etcd did not keep up", "events", dropped)
		}
		if len(batch) == 0 {
			return true
		}
		now := time.Now()
		ops := make([]clientv3.Op, 0, len(batch)+1)
		ops = append(ops, clientv3.OpDelete(keyPrefix(w.prefix), clientv3.WithRange(eventKey(w.prefix, now.Add(-Retention), 0))))
		for _, ev := range batch {
			b, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			w.seq++
			ops = append(ops, clientv3.OpPut(eventKey(w.prefix, now, w.seq), string(b)))
		}
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		resp, err := w.c.Txn(wctx).If(w.fence...).Then(ops...).Commit()
		cancel()
		switch {
		case err != nil:
			if ctx.Err() == nil {
				w.log.Warn("events not relayed to the other replicas", "events", len(batch), "error", err)
			}
		case !resp.Succeeded:
			w.log.Warn("events no longer relayed: this replica's leadership is gone", "events", len(batch))
			return false
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
		wait.Sleep(ctx, retryPause)
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
