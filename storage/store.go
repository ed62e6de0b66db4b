// Package storage owns singlecloud's durable state: a small key/value Store
// over named buckets with atomic multi-key transactions, its bbolt
// implementation (Bolt, the embedded default) and its etcd implementation
// (Etcd, for several replicas, with the fenced view its elected leader
// writes through: Etcd.Fenced), the schema version check, and the sealing of
// secrets at rest. Every write a Store acknowledges is durable before the
// call returns (fsynced by bbolt, committed by etcd's quorum), so a crash
// right after loses nothing that was acknowledged.
package storage

// Bucket names a group of keys. Buckets are spelled once, in schema.go.
type Bucket string

// KV is one key and its value, as returned by List.
type KV struct {
	Key   string
	Value []byte
}

// Reader reads keys. Get returns ErrNotFound (wrapped) for a missing key;
// List returns every pair of a bucket sorted by key, never nil-with-error for
// an empty bucket. Returned byte slices belong to the caller.
type Reader interface {
	Get(b Bucket, key string) ([]byte, error)
	List(b Bucket) ([]KV, error)
	// ListPrefix returns the pairs of b whose key starts with prefix,
	// sorted by key: one cluster's rows of a bucket shared by all.
	ListPrefix(b Bucket, prefix string) ([]KV, error)
}

// Tx is a read-write transaction: every Put and Delete made through it lands
// together or not at all.
type Tx interface {
	Reader
	Put(b Bucket, key string, value []byte) error
	Delete(b Bucket, key string) error
	// DeletePrefix removes every key of b that starts with prefix.
	DeletePrefix(b Bucket, prefix string) error
}

// Store is the seam between singlecloud and its database: bbolt (Bolt) or
// etcd (Etcd). It is safe for concurrent use. storagetest.RunStoreSuite
// checks this contract against both.
type Store interface {
	Reader
	// Put and Delete are single-key transactions. Delete of a missing key
	// is not an error.
	Put(b Bucket, key string, value []byte) error
	Delete(b Bucket, key string) error
	// Update runs fn in one atomic read-write transaction; if fn returns an
	// error nothing it wrote is kept and the error is returned.
	Update(fn func(Tx) error) error
	// View runs fn in a consistent read-only snapshot.
	View(fn func(Reader) error) error
	// Close releases the database; calls after Close fail with ErrClosed.
	Close() error
}
