package storage

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// etcdTx is the Tx of an Etcd Update: reads go through a snapshot (and see
// the transaction's own writes), writes are buffered until commit.
//
// The buffer always holds the transaction's net effect: a key in puts has
// that value; otherwise a key in dels, or under a prefix in delPrefixes, is
// deleted; any other key is as in the snapshot.
type etcdTx struct {
	e           *Etcd
	snap        *etcdSnapshot
	puts        map[string][]byte // etcd key → value
	dels        map[string]Bucket // etcd key → its bucket
	delPrefixes map[string]Bucket // etcd key prefix → its bucket
}

var _ Tx = (*etcdTx)(nil)

func newEtcdTx(e *Etcd) *etcdTx {
	return &etcdTx{e: e, snap: newEtcdSnapshot(e), puts: map[string][]byte{},
		dels: map[string]Bucket{}, delPrefixes: map[string]Bucket{}}
}

// Get returns key's value as the transaction has left it.
func (t *etcdTx) Get(b Bucket, key string) ([]byte, error) {
	full, err := t.e.key(b, key)
	if err != nil {
		return nil, err
	}
	if v, ok := t.puts[full]; ok {
		return bytes.Clone(v), t.snap.usable()
	}
	if t.deleted(full) {
		return nil, fmt.Errorf("key %q in bucket %s: %w", key, b, ErrNotFound)
	}
	return t.snap.Get(b, key)
}

// List returns every pair of b as the transaction has left it.
func (t *etcdTx) List(b Bucket) ([]KV, error) { return t.ListPrefix(b, "") }

// ListPrefix returns the pairs of b under prefix as the transaction has
// left them, sorted by key.
func (t *etcdTx) ListPrefix(b Bucket, prefix string) ([]KV, error) {
	stored, err := t.snap.ListPrefix(b, prefix)
	if err != nil {
		return nil, err
	}
	bp := t.e.bucketPrefix(b)
	kvs := make([]KV, 0, len(stored))
	for _, kv := range stored {
		full := bp + kv.Key
		if _, put := t.puts[full]; !put && !t.deleted(full) {
			kvs = append(kvs, kv)
		}
	}
	for full, v := range t.puts {
		if strings.HasPrefix(full, bp+prefix) {
			kvs = append(kvs, KV{Key: strings.TrimPrefix(full, bp), Value: bytes.Clone(v)})
		}
	}
	slices.SortFunc(kvs, func(x, y KV) int { return strings.Compare(x.Key, y.Key) })
	return kvs, nil
}

// Put buffers value for key.
func (t *etcdTx) Put(b Bucket, key string, value []byte) error {
	full, err := t.writable(b, key)
	if err != nil {
		return err
	}
	t.puts[full] = append([]byte{}, value...)
	delete(t.dels, full)
	return nil
}

// Delete buffers the deletion of key; a missing key is not an error.
func (t *etcdTx) Delete(b Bucket, key string) error {
	full, err := t.writable(b, key)
	if err != nil {
		return err
	}
	delete(t.puts, full)
	if !t.underDeletedPrefix(full) {
		t.dels[full] = b
	}
	return nil
}

// DeletePrefix buffers the deletion of every key of b under prefix: one
// range delete at commit, whatever the number of keys.
func (t *etcdTx) DeletePrefix(b Bucket, prefix string) error {
	if _, err := t.writable(b, prefix); err != nil {
		return err
	}
	fp := t.e.bucketPrefix(b) + prefix
	for full := range t.puts {
		if strings.HasPrefix(full, fp) {
			delete(t.puts, full)
		}
	}
	for full := range t.dels {
		if strings.HasPrefix(full, fp) {
			delete(t.dels, full)
		}
	}
	if t.underDeletedPrefix(fp) {
		return nil
	}
	for p := range t.delPrefixes {
		if strings.HasPrefix(p, fp) {
			delete(t.delPrefixes, p)
		}
	}
	t.delPrefixes[fp] = b
	return nil
}

// writable checks the bucket and that the transaction is still open.
func (t *etcdTx) writable(b Bucket, key string) (string, error) {
	full, err := t.e.key(b, key)
	if err != nil {
		return "", err
	}
	return full, t.snap.usable()
}

// deleted reports whether the buffer deletes full (which is not in puts).
func (t *etcdTx) deleted(full string) bool {
	_, del := t.dels[full]
	return del || t.underDeletedPrefix(full)
}

func (t *etcdTx) underDeletedPrefix(full string) bool {
	for p := range t.delPrefixes {
		if strings.HasPrefix(full, p) {
			return true
		}
	}
	return false
}

func (t *etcdTx) empty() bool {
	return len(t.puts) == 0 && len(t.dels) == 0 && len(t.delPrefixes) == 0
}

// errTxnConflict reports a commit refused because something the
// transaction read changed: Update runs fn again.
var errTxnConflict = errors.New("etcd transaction conflict")
