package storage

import (
	"bytes"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// boltTx adapts a bbolt transaction to Tx. Values returned by bbolt point
// into its memory map and are valid only during the transaction, so every
// read is copied out.
type boltTx struct {
	tx *bolt.Tx
}

var _ Tx = boltTx{}

// Get returns a copy of key's value in bucket b, or ErrNotFound.
func (t boltTx) Get(b Bucket, key string) ([]byte, error) {
	bk, err := t.bucket(b)
	if err != nil {
		return nil, err
	}
	v := bk.Get([]byte(key))
	if v == nil {
		return nil, fmt.Errorf("key %q in bucket %s: %w", key, b, ErrNotFound)
	}
	return bytes.Clone(v), nil
}

// List returns copies of every pair of bucket b in key order (bbolt keeps
// keys sorted bytewise, which is Go's string order).
func (t boltTx) List(b Bucket) ([]KV, error) {
	bk, err := t.bucket(b)
	if err != nil {
		return nil, err
	}
	kvs := make([]KV, 0)
	err = bk.ForEach(func(k, v []byte) error {
		if v == nil { // a nested bucket: the schema has none
			return nil
		}
		kvs = append(kvs, KV{Key: string(k), Value: bytes.Clone(v)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list bucket %s: %w", b, err)
	}
	return kvs, nil
}

// ListPrefix returns copies of the pairs of b whose key starts with
// prefix, in key order.
func (t boltTx) ListPrefix(b Bucket, prefix string) ([]KV, error) {
	bk, err := t.bucket(b)
	if err != nil {
		return nil, err
	}
	kvs := make([]KV, 0)
	p := []byte(prefix)
	c := bk.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if v != nil {
			kvs = append(kvs, KV{Key: string(k), Value: bytes.Clone(v)})
		}
	}
	return kvs, nil
}

// DeletePrefix removes every key of b that starts with prefix.
func (t boltTx) DeletePrefix(b Bucket, prefix string) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	p := []byte(prefix)
	c := bk.Cursor()
	for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Seek(p) {
		if err := c.Delete(); err != nil {
			return fmt.Errorf("delete keys with prefix %q in bucket %s: %w", prefix, b, err)
		}
	}
	return nil
}

// Put stores value under key in bucket b.
func (t boltTx) Put(b Bucket, key string, value []byte) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	if value == nil {
		value = []byte{} // bbolt reads a nil value back as "missing"
	}
	if err := bk.Put([]byte(key), value); err != nil {
		return fmt.Errorf("put key %q in bucket %s: %w", key, b, err)
	}
	return nil
}

// Delete removes key from bucket b; a missing key is not an error.
func (t boltTx) Delete(b Bucket, key string) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	if err := bk.Delete([]byte(key)); err != nil {
		return fmt.Errorf("delete key %q in bucket %s: %w", key, b, err)
	}
	return nil
}

func (t boltTx) bucket(b Bucket) (*bolt.Bucket, error) {
	bk := t.tx.Bucket([]byte(b))
	if bk == nil {
		return nil, unknownBucketError(b)
	}
	return bk, nil
}
