package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults of EtcdOptions.
const (
	DefaultEtcdPrefix         = "/singlecloud/"
	DefaultEtcdDialTimeout    = 5 * time.Second
	DefaultEtcdRequestTimeout = 5 * time.Second
	// DefaultEtcdMaxTxnOps is etcd's own default of --max-txn-ops.
	DefaultEtcdMaxTxnOps = 128
	// DefaultEtcdUpdateTimeout bounds how long Update keeps running fn
	// again while concurrent writers keep invalidating what it read. A
	// count of attempts is no bound a caller can rely on: each conflict
	// means another writer committed, so the writers as a whole progress,
	// but on a loaded machine one of several writers of a hot key can lose
	// ten rounds in a row within a second. Callers (a state persisted in an
	// FSM transition, a request's write) would rather wait than fail; 30 s
	// is far beyond any contention burst seen among a handful of replicas
	// and still leaves an HTTP request (60 s write deadline) its answer.
	DefaultEtcdUpdateTimeout = 30 * time.Second
	// DefaultEtcdListPageSize is how many pairs one List request fetches.
	DefaultEtcdListPageSize = 500
)

var (
	// ErrConflict reports an Update whose reads were invalidated by
	// concurrent writers on every attempt.
	ErrConflict = errors.New("transaction conflicted with concurrent writers")
	// ErrTxnTooLarge reports an Update with more operations than one etcd
	// transaction may hold (EtcdOptions.MaxTxnOps, etcd's --max-txn-ops).
	ErrTxnTooLarge = errors.New("transaction too large for one etcd transaction")
)

// EtcdTLS names the PEM files of a TLS connection to etcd. A zero value
// means plain TCP (unless an endpoint is https://, then the system roots).
type EtcdTLS struct {
	CertFile string // client certificate, with KeyFile
	KeyFile  string // client private key, with CertFile
	CAFile   string // CA that signed etcd's serving certificate
}

// EtcdOptions configures OpenEtcd. Endpoints and KeyFile are required.
type EtcdOptions struct {
	// Endpoints are etcd's client URLs (http://127.0.0.1:2379, …).
	Endpoints []string
	// Prefix starts every key of this installation, so several
	// installations can share one etcd; "" means DefaultEtcdPrefix. A
	// missing trailing "/" is added, so "/a" never sees "/ab/".
	Prefix string
	TLS    EtcdTLS
	// DialTimeout bounds connecting; RequestTimeout bounds each request
	// (one Get, one page of a List, one commit). Zero means the defaults.
	DialTimeout    time.Duration
	RequestTimeout time.Duration
	// KeyFile is the key that seals secrets, in the format of bbolt's key
	// file; every replica must be given the same file. It is created only
	// when the prefix holds no installation yet.
	KeyFile string
	// MaxTxnOps is the most operations (and the most comparisons) one
	// commit may carry: etcd's --max-txn-ops. An Update needing more fails
	// with ErrTxnTooLarge and writes nothing. Zero means 128.
	MaxTxnOps int
	// UpdateTimeout bounds how long an Update (or a View, rerun after a
	// compaction) keeps rerunning fn under conflicts, from its first run;
	// zero means DefaultEtcdUpdateTimeout.
	UpdateTimeout time.Duration
	// UpdateAttempts, if positive, also bounds the runs of fn; zero means
	// only UpdateTimeout bounds them.
	UpdateAttempts int
	// ListPageSize is how many pairs one range request returns; zero means
	// DefaultEtcdListPageSize.
	ListPageSize int
	// AllowIncomplete opens a prefix that an interrupted restore left at
	// SchemaVersionIncomplete, for the restore that replaces it. A
	// singlecloud serving the prefix never sets it.
	AllowIncomplete bool
	// MustExist opens only a prefix that holds an installation, and
	// writes nothing to one that does not: ErrNoInstallation. A backup or
	// a migration's source sets it, so that a mistyped prefix is an error,
	// not a new, empty installation backed up as if all were well.
	MustExist bool
}

// Etcd is the etcd implementation of Store, for several singlecloud
// replicas sharing one database. Bucket b's key k is the etcd key
// <prefix><b>/<k>. Reads are linearizable; a View or an Update reads at one
// revision (the first read's). Update is optimistic: its commit is one etcd
// transaction conditioned on nothing fn read having changed since, and fn is
// run again on a conflict. A write is acknowledged once etcd's quorum has
// committed it.
type Etcd struct {
	client *clientv3.Client
	opts   EtcdOptions
	sealer Sealer
	// ctx is cancelled by Close, which interrupts calls in flight.
	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Bool
	// gate lets Updates run together (read-locked) but a rerun after a
	// conflict alone (locked).
	gate sync.RWMutex
	// fence, if set, conditions every commit on a leadership (Fenced);
	// parent is then the Etcd whose connection this view shares.
	fence  *etcdFence
	parent *Etcd
}

var _ Store = (*Etcd)(nil)

// OpenEtcd connects to etcd, loads the sealing key and checks (or, for a
// new prefix, writes) the schema version under the prefix, exactly as
// OpenBolt does in its file: a prefix of another version is refused with
// ErrSchemaVersion. A key file that is not the key the installation's
// secrets were sealed with is refused with ErrDecrypt.
func OpenEtcd(ctx context.Context, opts EtcdOptions) (*Etcd, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := opts.tlsConfig()
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:            opts.Endpoints,
		DialTimeout:          opts.DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		TLS:                  tlsCfg,
		Context:              context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("open etcd %s: %w", strings.Join(opts.Endpoints, ","), err)
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &Etcd{client: client, opts: opts, ctx: base, cancel: cancel}
	if err := e.init(ctx); err != nil {
		e.Close()
		return nil, fmt.Errorf("open etcd %s prefix %s: %w", strings.Join(opts.Endpoints, ","), opts.Prefix, err)
	}
	return e, nil
}

// Sealer returns the Sealer of the key file, the same sealing as Bolt's.
func (e *Etcd) Sealer() Sealer { return e.sealer }

// Prefix returns the prefix of every key of this store.
func (e *Etcd) Prefix() string { return e.opts.Prefix }

// Client returns the etcd client, for what the Store does not cover
// (leader election on the same connection).
func (e *Etcd) Client() *clientv3.Client { return e.client }

// Get returns the value of key in bucket b.
func (e *Etcd) Get(b Bucket, key string) ([]byte, error) {
	var v []byte
	err := e.View(func(r Reader) error {
		var err error
		v, err = r.Get(b, key)
		return err
	})
	return v, err
}

// List returns every pair of bucket b sorted by key, read page by page at
// one revision.
func (e *Etcd) List(b Bucket) ([]KV, error) {
	return e.ListPrefix(b, "")
}

// ListPrefix returns the pairs of b whose key starts with prefix, sorted.
func (e *Etcd) ListPrefix(b Bucket, prefix string) ([]KV, error) {
	var kvs []KV
	err := e.View(func(r Reader) error {
		var err error
		kvs, err = r.ListPrefix(b, prefix)
		return err
	})
	return kvs, err
}

// Put stores value under key in bucket b.
func (e *Etcd) Put(b Bucket, key string, value []byte) error {
	return e.Update(func(tx Tx) error { return tx.Put(b, key, value) })
}

// Delete removes key from bucket b; a missing key is not an error (and
// writes nothing).
func (e *Etcd) Delete(b Bucket, key string) error {
	return e.Update(func(tx Tx) error {
		if _, err := tx.Get(b, key); errors.Is(err, ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return tx.Delete(b, key)
	})
}

// View runs fn against a snapshot: every read is at the revision of fn's
// first read, so writes committed after it are not seen. If etcd compacts
// that revision away while fn runs, fn runs again on a newer one (fn may
// thus run more than once).
func (e *Etcd) View(fn func(Reader) error) error {
	deadline := time.Now().Add(e.opts.UpdateTimeout)
	for attempt := 1; ; attempt++ {
		if e.isClosed() {
			return e.closedError()
		}
		r := newEtcdSnapshot(e)
		err := fn(r)
		r.done = true
		if errors.Is(err, errCompacted) && e.mayRetry(attempt, deadline) {
			continue
		}
		return e.mapErr(err)
	}
}

// Update runs fn in an optimistic transaction: fn reads at one revision
// and its writes are buffered (fn's reads see them); the commit is one etcd
// transaction that applies them only if nothing fn read has changed since.
// On a conflict fn runs again from scratch, after a capped backoff, until
// UpdateTimeout has passed since the first run (and at most UpdateAttempts
// times, if set), then Update fails with ErrConflict. fn may therefore run more than once and
// must not have effects outside the Tx that a rerun would repeat, nor call
// e's own write methods (as with Bolt, that can deadlock). If fn fails
// nothing is written. A commit with more than MaxTxnOps operations fails
// with ErrTxnTooLarge and writes nothing. A commit etcd does not answer
// within RequestTimeout is not retried: its error says that it may or may
// not have been applied.
//
// Updates of one Etcd run in parallel, but a rerun after a conflict runs
// alone among them: contention inside one process degrades to taking turns
// (as bbolt's single writer does) instead of starving a writer. Conflicts
// with other processes are retried after a jittered, growing delay.
func (e *Etcd) Update(fn func(Tx) error) error {
	deadline := time.Now().Add(e.opts.UpdateTimeout)
	exclusive := false
	for attempt := 1; ; attempt++ {
		if e.isClosed() {
			return e.closedError()
		}
		err := e.attempt(fn, exclusive)
		retry := errors.Is(err, errTxnConflict) || errors.Is(err, errCompacted)
		if !retry {
			return e.mapErr(err)
		}
		if !e.mayRetry(attempt, deadline) {
			return fmt.Errorf("etcd prefix %s: update gave up after %d attempts in %s, other writers changing what it "+
				"read each time: retry it: %w", e.opts.Prefix, attempt, e.opts.UpdateTimeout, ErrConflict)
		}
		exclusive = true
		if err := e.backoff(attempt); err != nil {
			return err
		}
	}
}

// attempt runs fn once and commits what it wrote.
func (e *Etcd) attempt(fn func(Tx) error, exclusive bool) error {
	if exclusive {
		e.gate.Lock()
		defer e.gate.Unlock()
	} else {
		e.gate.RLock()
		defer e.gate.RUnlock()
	}
	tx := newEtcdTx(e)
	defer func() { tx.snap.done = true }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.commit()
}

// mayRetry reports whether a transaction that ran attempt times and is due
// to end at deadline may run again.
func (e *Etcd) mayRetry(attempt int, deadline time.Time) bool {
	if e.opts.UpdateAttempts > 0 && attempt >= e.opts.UpdateAttempts {
		return false
	}
	return time.Now().Before(deadline)
}

// backoff sleeps a jittered delay that doubles with each attempt, from
// about 2 ms up to about 250 ms.
func (e *Etcd) backoff(attempt int) error {
	d := min(2*time.Millisecond<<min(attempt-1, 7), 250*time.Millisecond)
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-e.ctx.Done():
		return e.closedError()
	}
}

// Close cancels calls in flight and closes the connection (a fenced view
// closes only itself: its parent's connection stays open). Later calls,
// Close included, return ErrClosed.
func (e *Etcd) Close() error {
	if !e.closed.CompareAndSwap(false, true) {
		return e.closedError()
	}
	e.cancel()
	if e.parent != nil {
		return nil // a fenced view: the connection is its parent's
	}
	if err := e.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("close etcd client: %w", err)
	}
	return nil
}

// isClosed reports whether e, or the Etcd a fenced view was made from, is
// closed.
func (e *Etcd) isClosed() bool {
	return e.closed.Load() || (e.parent != nil && e.parent.isClosed())
}

func (e *Etcd) closedError() error {
	return fmt.Errorf("etcd prefix %s: %w", e.opts.Prefix, ErrClosed)
}

// mapErr reports a call interrupted by Close as ErrClosed.
func (e *Etcd) mapErr(err error) error {
	if err != nil && e.isClosed() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w (%v)", e.closedError(), err)
	}
	return err
}

// request returns the context of one etcd request.
func (e *Etcd) request() (context.Context, context.CancelFunc) {
	return context.WithTimeout(e.ctx, e.opts.RequestTimeout)
}

// key returns the etcd key of key in bucket b, or ErrUnknownBucket.
func (e *Etcd) key(b Bucket, key string) (string, error) {
	if err := checkBucket(b); err != nil {
		return "", err
	}
	return e.opts.Prefix + string(b) + "/" + key, nil
}

// bucketPrefix is the etcd prefix of every key of bucket b.
func (e *Etcd) bucketPrefix(b Bucket) string { return e.opts.Prefix + string(b) + "/" }

// deletionMarker is the key every commit that deletes keys of bucket b
// rewrites: etcd cannot compare a range for keys deleted from it, so a
// transaction that listed part of b compares this key instead.
func (e *Etcd) deletionMarker(b Bucket) string { return e.opts.Prefix + ".deleted/" + string(b) }

// checkBucket refuses a bucket that is not part of the schema, with the
// error bbolt gives.
func checkBucket(b Bucket) error {
	for _, known := range Buckets() {
		if b == known {
			return nil
		}
	}
	return unknownBucketError(b)
}

func unknownBucketError(b Bucket) error {
	return fmt.Errorf("bucket %q is not part of schema version %s: use a bucket constant from storage/schema.go: %w",
		b, SchemaVersion, ErrUnknownBucket)
}
