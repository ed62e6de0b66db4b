package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/internal/wait"
)

// ErrReadOnly is returned by every write to a Mirror: a follower replica
// reads from its mirror and forwards writes to the leader.
var ErrReadOnly = errors.New("this copy of the store is read-only: writes go to the leading replica")

// mirrorPage is how many keys one read of the mirror's initial load
// returns: pages keep each etcd response far below its size limit.
const mirrorPage = 500

// mirrorRetry is the pause before loading and watching again after the
// watch broke (etcd unreachable, or the watched revision compacted).
const mirrorRetry = 500 * time.Millisecond

// Row is one key of a mirrored bucket with the etcd revision that last
// wrote it: a reader may cache what it derives from Value under
// (Key, ModRevision). Value is shared: the caller must not modify it.
type Row struct {
	Key         string
	Value       []byte
	ModRevision int64
}

// Mirror is a read-only copy of some buckets of an Etcd store, kept in
// memory and current by a watch of the store's prefix, so that a follower
// replica answers reads without asking the leader (issue 12). Sync makes a
// read linearizable: it waits until the mirror has applied every write
// etcd had committed when Sync was called, so that a read that starts
// after any replica acknowledged a write sees it.
//
// A Mirror is a Reader; its writes fail with ErrReadOnly. It runs until
// Close or until the context given to NewMirror ends.
type Mirror struct {
	e       *Etcd
	watcher clientv3.Watcher
	keep    map[Bucket]bool
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.RWMutex
	buckets map[Bucket]*mirrorBucket
	// applied is the revision up to which every write under the prefix
	// has been applied.
	applied int64
	// advanced is closed, and replaced, whenever applied grows.
	advanced chan struct{}
	// broken says why the watch is down, nil while it runs.
	broken error
}

var _ Store = (*Mirror)(nil)

// NewMirror loads buckets of e into memory at one revision and keeps them
// current until ctx ends or Close is called. The first load must succeed
// within e's request timeout; later watch failures are retried (Sync
// reports them while they last).
func NewMirror(ctx context.Context, e *Etcd, buckets ...Bucket) (*Mirror, error) {
	keep := map[Bucket]bool{}
	for _, b := range buckets {
		if err := checkBucket(b); err != nil {
			return nil, err
		}
		keep[b] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &Mirror{e: e, watcher: clientv3.NewWatcher(e.client), keep: keep, cancel: cancel,
		done: make(chan struct{}), advanced: make(chan struct{})}
	rev, err := m.load(ctx)
	if err != nil {
		cancel()
		_ = m.watcher.Close()
		return nil, fmt.Errorf("load this replica's copy of etcd prefix %s: %w (check that --etcd-endpoints are reachable "+
			"from here and etcd is healthy: etcdctl endpoint health)", e.opts.Prefix, err)
	}
	go m.run(ctx, rev)
	return m, nil
}

// Close stops the watch and waits for it to end. It does not close the
// Etcd it mirrors.
func (m *Mirror) Close() error {
	m.cancel()
	<-m.done
	return nil
}

// run watches from rev+1 until ctx ends, loading everything again when the
// watch breaks.
func (m *Mirror) run(ctx context.Context, rev int64) {
	defer close(m.done)
	defer m.watcher.Close()
	for {
		watchErr := m.watch(ctx, rev)
		if ctx.Err() != nil {
			return
		}
		m.setBroken(watchErr)
		for {
			if !wait.Sleep(ctx, mirrorRetry) {
				return
			}
			var err error
			if rev, err = m.load(ctx); err == nil {
				break
			}
			m.setBroken(fmt.Errorf("%w; reading the prefix again failed: %w", watchErr, err))
		}
	}
}

// watch applies the events after rev until the watch breaks or ctx ends.
func (m *Mirror) watch(ctx context.Context, rev int64) error {
	wctx, stop := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer stop()
	ch := m.watcher.Watch(wctx, m.e.opts.Prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
	m.setBroken(nil)
	for wr := range ch {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("watch etcd prefix %s: %w", m.e.opts.Prefix, err)
		}
		m.apply(wr)
	}
	return fmt.Errorf("watch etcd prefix %s: the watch ended", m.e.opts.Prefix)
}

// load reads every key of the kept buckets at one revision, replaces the
// mirror's content with them, and returns that revision.
func (m *Mirror) load(ctx context.Context) (int64, error) {
	buckets := map[Bucket]*mirrorBucket{}
	var rev int64
	for b := range m.keep {
		buckets[b] = newMirrorBucket()
		start, end := m.e.bucketPrefix(b), clientv3.GetPrefixRangeEnd(m.e.bucketPrefix(b))
		for {
			rctx, cancel := context.WithTimeout(ctx, m.e.opts.RequestTimeout)
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(mirrorPage)}
			if rev != 0 {
				opts = append(opts, clientv3.WithRev(rev))
			}
			resp, err := m.e.client.Get(rctx, start, opts...)
			cancel()
			if err != nil {
				return 0, fmt.Errorf("read bucket %s: %w", b, err)
			}
			if rev == 0 {
				rev = resp.Header.Revision
			}
			for _, kv := range resp.Kvs {
				k := strings.TrimPrefix(string(kv.Key), m.e.bucketPrefix(b))
				buckets[b].put(Row{Key: k, Value: kv.Value, ModRevision: kv.ModRevision})
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
	}
	if rev == 0 {
		rctx, cancel := context.WithTimeout(ctx, m.e.opts.RequestTimeout)
		resp, err := m.e.client.Get(rctx, m.e.opts.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err != nil {
			return 0, err
		}
		rev = resp.Header.Revision
	}
	m.mu.Lock()
	m.buckets = buckets
	m.advanceLocked(rev)
	m.mu.Unlock()
	return rev, nil
}

// apply applies one watch response: its events, or, for a progress
// notification, the revision every event before has been sent up to.
func (m *Mirror) apply(wr clientv3.WatchResponse) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rev := wr.Header.Revision
	if !wr.IsProgressNotify() {
		// An event response may carry a header revision past its last
		// event while later events of that revision range are still to
		// come: only a progress notification vouches for a revision.
		rev = 0
	}
	for _, ev := range wr.Events {
		rev = max(rev, ev.Kv.ModRevision)
		b, k, ok := m.split(string(ev.Kv.Key))
		if !ok {
			continue
		}
		if ev.Type == clientv3.EventTypeDelete {
			m.buckets[b].del(k)
		} else {
			m.buckets[b].put(Row{Key: k, Value: ev.Kv.Value, ModRevision: ev.Kv.ModRevision})
		}
	}
	m.advanceLocked(rev)
}

// split maps an etcd key to a kept bucket and its key there.
func (m *Mirror) split(full string) (Bucket, string, bool) {
	rest, ok := strings.CutPrefix(full, m.e.opts.Prefix)
	if !ok {
		return "", "", false
	}
	b, k, ok := strings.Cut(rest, "/")
	if !ok || !m.keep[Bucket(b)] {
		return "", "", false
	}
	return Bucket(b), k, true
}

func (m *Mirror) advanceLocked(rev int64) {
	if rev > m.applied {
		m.applied = rev
		close(m.advanced)
		m.advanced = make(chan struct{})
	}
}

func (m *Mirror) setBroken(err error) {
	m.mu.Lock()
	m.broken = err
	m.mu.Unlock()
}

// Revision is the revision the mirror has applied every write up to.
func (m *Mirror) Revision() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.applied
}

// Changed returns a channel closed when the mirror next applies a
// revision: a reader waiting for new rows reads again then.
func (m *Mirror) Changed() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.advanced
}

// Sync waits until the mirror has applied every write etcd had committed
// when Sync was called: reads after it are as fresh as a read of etcd
// itself. It costs one linearizable etcd read, and a progress request
// when the mirror has not seen that revision yet. ctx bounds the wait.
func (m *Mirror) Sync(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, m.e.opts.RequestTimeout)
	resp, err := m.e.client.Get(rctx, m.e.opts.Prefix+".keycheck", clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return fmt.Errorf("read etcd's current revision: %w", err)
	}
	return m.WaitFor(ctx, resp.Header.Revision)
}

// progressRetry is how often a waiting WaitFor asks etcd for progress
// again: a progress reply from a member that lags the one Sync read
// from, or one lost as the watch stream reconnects, moves nothing, and
// waiting for the next write of this prefix could take the whole bound.
const progressRetry = 100 * time.Millisecond

// WaitFor waits until the mirror has applied revision rev, asking etcd
// for progress notifications meanwhile (a revision may hold no write of
// this prefix). ctx bounds the wait.
func (m *Mirror) WaitFor(ctx context.Context, rev int64) error {
	tick := time.NewTicker(progressRetry)
	defer tick.Stop()
	for {
		m.mu.RLock()
		applied, advanced, broken := m.applied, m.advanced, m.broken
		m.mu.RUnlock()
		if applied >= rev {
			return nil
		}
		if err := m.watcher.RequestProgress(clientv3.WithRequireLeader(ctx)); err != nil && ctx.Err() == nil {
			broken = errors.Join(broken, err)
		}
		select {
		case <-advanced:
		case <-tick.C:
		case <-m.done:
			return fmt.Errorf("the mirror of etcd prefix %s is closed at revision %d, not %d: %w", m.e.opts.Prefix,
				applied, rev, ErrClosed)
		case <-ctx.Done():
			why := fmt.Sprintf("the mirror of etcd prefix %s reached revision %d, not %d", m.e.opts.Prefix, applied, rev)
			if broken != nil {
				why += fmt.Sprintf(" (its watch is down: %v)", broken)
			}
			return fmt.Errorf("%s: %w", why, ctx.Err())
		}
	}
}

// Rows returns the rows of bucket b whose key starts with prefix, sorted
// by key, without copying their values.
func (m *Mirror) Rows(b Bucket, prefix string) ([]Row, error) { return m.RowsFrom(b, prefix, "") }

// RowsFrom is Rows from key start on: a reader that has the rows before
// start reads only the newer ones.
func (m *Mirror) RowsFrom(b Bucket, prefix, start string) ([]Row, error) {
	if !m.keep[b] {
		return nil, fmt.Errorf("bucket %s is not mirrored here: %w", b, ErrUnknownBucket)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.buckets[b].from(prefix, start), nil
}

// Get returns a copy of the value of key in bucket b.
func (m *Mirror) Get(b Bucket, key string) ([]byte, error) {
	if !m.keep[b] {
		return nil, fmt.Errorf("bucket %s is not mirrored here: %w", b, ErrUnknownBucket)
	}
	m.mu.RLock()
	r, ok := m.buckets[b].rows[key]
	m.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("key %q in bucket %s: %w", key, b, ErrNotFound)
	}
	return append([]byte{}, r.Value...), nil
}

// List returns copies of every pair of bucket b, sorted by key.
func (m *Mirror) List(b Bucket) ([]KV, error) { return m.ListPrefix(b, "") }

// ListPrefix returns copies of the pairs of b whose key starts with
// prefix, sorted by key.
func (m *Mirror) ListPrefix(b Bucket, prefix string) ([]KV, error) {
	rows, err := m.Rows(b, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]KV, len(rows))
	for i, r := range rows {
		out[i] = KV{Key: r.Key, Value: append([]byte{}, r.Value...)}
	}
	return out, nil
}

// View runs fn on the mirror. Each read sees the mirror at one applied
// revision, but two reads in fn may see two: the follower's readers each
// read one row or one bucket.
func (m *Mirror) View(fn func(Reader) error) error { return fn(m) }

// Put, Delete and Update refuse: see ErrReadOnly.
func (m *Mirror) Put(Bucket, string, []byte) error { return ErrReadOnly }

// Delete refuses: see ErrReadOnly.
func (m *Mirror) Delete(Bucket, string) error { return ErrReadOnly }

// Update refuses: see ErrReadOnly.
func (m *Mirror) Update(func(Tx) error) error { return ErrReadOnly }

// Sealer returns the store's Sealer: the mirror holds the store's sealed
// values as they are.
func (m *Mirror) Sealer() Sealer { return m.e.sealer }
