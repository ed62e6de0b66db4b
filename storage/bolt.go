package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultLockTimeout bounds the wait for the database file lock. Only one
// process may hold it; a second singlecloud on the same file should fail
// its start within seconds with a clear message, not hang.
const DefaultLockTimeout = 5 * time.Second

// dbFileMode keeps the database private to its owner: it holds user records
// and, sealed, every cluster secret.
const dbFileMode fs.FileMode = 0o600

// BoltOptions tunes OpenBolt. The zero value is ready to use.
type BoltOptions struct {
	// Timeout bounds the wait for the file lock; zero means
	// DefaultLockTimeout.
	Timeout time.Duration
	// KeyFile is the path of the key that seals secrets; empty means the
	// database path followed by ".key".
	KeyFile string
}

// Bolt is the bbolt implementation of Store, the default for a single
// server. Every acknowledged write has been fsynced. It is safe for
// concurrent use; bbolt runs one writer at a time and readers in parallel.
type Bolt struct {
	db     *bolt.DB
	path   string
	sealer Sealer
	closed atomic.Bool
}

var _ Store = (*Bolt)(nil)

// OpenBolt opens the database at path, creating it (mode 0600) and its key
// file if neither exists. It creates every bucket of the schema, writes
// SchemaVersion into a new file and refuses a file of another version
// (ErrSchemaVersion). It refuses an existing file that group or others may
// access (ErrFileMode). It refuses an existing database whose key file is
// missing, since a new key could not open the secrets already sealed. It
// blocks at most opts.Timeout for the file lock.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	if path == "" {
		return nil, errors.New("open database: empty path: give the database file path (flag --db)")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultLockTimeout
	}
	if opts.KeyFile == "" {
		opts.KeyFile = path + ".key"
	}
	if err := checkDBFileMode(path); err != nil {
		return nil, err
	}
	sealer, err := loadKeyFor(path, opts.KeyFile)
	if err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, dbFileMode, &bolt.Options{Timeout: opts.Timeout})
	if err != nil {
		return nil, explainOpenError(path, opts.Timeout, err)
	}
	if err := db.Update(initSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return &Bolt{db: db, path: path, sealer: sealer}, nil
}

// Sealer returns the Sealer of the database's key file.
func (b *Bolt) Sealer() Sealer { return b.sealer }

// Get returns a copy of the value of key in bucket bk.
func (b *Bolt) Get(bk Bucket, key string) ([]byte, error) {
	var v []byte
	err := b.View(func(r Reader) error {
		var err error
		v, err = r.Get(bk, key)
		return err
	})
	return v, err
}

// List returns copies of every pair of bucket bk, sorted by key.
func (b *Bolt) List(bk Bucket) ([]KV, error) {
	var kvs []KV
	err := b.View(func(r Reader) error {
		var err error
		kvs, err = r.List(bk)
		return err
	})
	return kvs, err
}

// ListPrefix returns copies of the pairs of bucket bk whose key starts
// with prefix, sorted by key.
func (b *Bolt) ListPrefix(bk Bucket, prefix string) ([]KV, error) {
	var kvs []KV
	err := b.View(func(r Reader) error {
		var err error
		kvs, err = r.ListPrefix(bk, prefix)
		return err
	})
	return kvs, err
}

// Put stores value under key in bucket bk, durably, in its own transaction.
func (b *Bolt) Put(bk Bucket, key string, value []byte) error {
	return b.Update(func(tx Tx) error { return tx.Put(bk, key, value) })
}

// Delete removes key from bucket bk; a missing key is not an error.
func (b *Bolt) Delete(bk Bucket, key string) error {
	return b.Update(func(tx Tx) error { return tx.Delete(bk, key) })
}

// Update runs fn in one read-write transaction and commits it (fsync) if
// fn returns nil. It blocks while another Update runs. The Tx must not be
// used after fn returns, nor may fn call b's own methods (bbolt would
// deadlock on its writer lock).
func (b *Bolt) Update(fn func(Tx) error) error {
	if b.closed.Load() {
		return b.closedError()
	}
	err := b.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx: tx}) })
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return b.closedError()
	}
	return err
}

// View runs fn in a read-only snapshot: writes committed while fn runs are
// not seen. The Reader must not be used after fn returns.
func (b *Bolt) View(fn func(Reader) error) error {
	if b.closed.Load() {
		return b.closedError()
	}
	err := b.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx: tx}) })
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return b.closedError()
	}
	return err
}

// Close waits for running transactions and releases the file and its lock.
// Later calls, Close included, return ErrClosed.
func (b *Bolt) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return b.closedError()
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("close database %s: %w", b.path, err)
	}
	return nil
}

func (b *Bolt) closedError() error {
	return fmt.Errorf("database %s: %w", b.path, ErrClosed)
}

// checkDBFileMode refuses an existing database file that anyone but its
// owner may read or write: its user records and sealed secrets are the
// owner's alone, like the key file. A missing file is fine (bbolt creates it
// 0600).
func checkDBFileMode(path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("open database %s: it is not a regular file: point --db at singlecloud's database file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("open database %s: the file has mode %#o, open to other users: run `chmod 600 %s`: %w",
			path, perm, path, ErrFileMode)
	}
	return nil
}

// loadKeyFor loads or creates the key of the database at dbPath. A key is
// created only for a new database.
func loadKeyFor(dbPath, keyPath string) (Sealer, error) {
	_, dbErr := os.Stat(dbPath)
	_, keyErr := os.Stat(keyPath)
	if dbErr == nil && errors.Is(keyErr, fs.ErrNotExist) {
		return nil, fmt.Errorf("database %s exists but its key file %s is missing: restore the key file "+
			"(the secrets in the database cannot be read without it), or point the key file option at it", dbPath, keyPath)
	}
	sealer, err := LoadOrCreateKey(keyPath)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", dbPath, err)
	}
	return sealer, nil
}

// explainOpenError turns bbolt's open failures into messages that say what
// to do.
func explainOpenError(path string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("open database %s: its lock is still held after %s: is another singlecloud running on this file? stop it first: %w",
			path, timeout, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return fmt.Errorf("open database %s: it is not a valid singlecloud database file: restore it from a backup or point --db elsewhere: %w",
			path, err)
	default:
		return fmt.Errorf("open database %s: %w", path, err)
	}
}
