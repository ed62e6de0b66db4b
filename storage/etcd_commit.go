package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// commit writes the buffer in one etcd transaction whose If holds what the
// transaction read: each key read by Get still has the ModRevision seen (0:
// still missing), and each prefix read by List/ListPrefix has no key
// modified or created after the snapshot (ModRevision < rev+1 over the
// range) and its bucket no key deleted after it (its deletion marker). A
// transaction that wrote nothing commits nothing.
func (t *etcdTx) commit() error {
	if t.empty() {
		return nil
	}
	ops, err := t.ops()
	if err != nil {
		return err
	}
	cmps := t.compares()
	if len(ops) > t.e.opts.MaxTxnOps {
		return fmt.Errorf("update: the transaction needs %d operations (each put and delete, one per DeletePrefix, "+
			"one per bucket with deletions), more than the %d one etcd transaction may hold (--max-txn-ops): "+
			"nothing was written; split it into smaller updates: %w", len(ops), t.e.opts.MaxTxnOps, ErrTxnTooLarge)
	}
	if len(cmps) > t.e.maxCompares() {
		return fmt.Errorf("update: the transaction needs %d comparisons for what it read, more than the %d one etcd "+
			"transaction may hold (--max-txn-ops): nothing was written: %w", len(cmps), t.e.maxCompares(), ErrTxnTooLarge)
	}
	cmps = append(cmps, t.e.fenceCompares()...)
	ctx, cancel := t.e.request()
	defer cancel()
	resp, err := t.e.client.Txn(ctx).If(cmps...).Then(ops...).Else(t.e.fenceElse()...).Commit()
	switch {
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return fmt.Errorf("update: etcd refused a transaction of %d operations: its --max-txn-ops is lower than "+
			"the %d configured here: nothing was written: %w", len(ops), t.e.opts.MaxTxnOps, ErrTxnTooLarge)
	case errors.Is(err, rpctypes.ErrRequestTooLarge) || status.Code(err) == codes.ResourceExhausted:
		return fmt.Errorf("update: the transaction is larger than one etcd request may be (etcd's --max-request-bytes, "+
			"1.5 MiB by default): nothing was written; write fewer or smaller values per update: %v: %w", err, ErrTxnTooLarge)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("update: etcd did not answer the commit within %s: it may or may not have been applied: %w",
			t.e.opts.RequestTimeout, err)
	case err != nil:
		return fmt.Errorf("update: commit: %w", err)
	case !resp.Succeeded:
		if err := t.e.fencedOut(resp); err != nil {
			return err
		}
		return errTxnConflict
	}
	return nil
}

// ops turns the buffer into etcd operations: range deletes, deletes, puts
// and a rewrite of the deletion marker of every bucket losing keys. etcd
// refuses a put inside a range deleted by the same transaction, so a
// deleted prefix under which a key is put again becomes the deletes of the
// keys it holds at the snapshot (the range read makes a later insertion
// there a conflict).
func (t *etcdTx) ops() ([]clientv3.Op, error) {
	var ops []clientv3.Op
	marked := map[Bucket]bool{}
	for _, fp := range sortedKeys(t.delPrefixes) {
		b := t.delPrefixes[fp]
		marked[b] = true
		if !t.putUnder(fp) {
			ops = append(ops, clientv3.OpDelete(fp, clientv3.WithPrefix()))
			continue
		}
		kvs, err := t.snap.rangePrefix(b, fp)
		if err != nil {
			return nil, fmt.Errorf("update: read the keys under deleted prefix %q: %w", fp, err)
		}
		for _, kv := range kvs {
			if _, put := t.puts[string(kv.Key)]; !put {
				ops = append(ops, clientv3.OpDelete(string(kv.Key)))
			}
		}
	}
	for _, full := range sortedKeys(t.dels) {
		if mod, read := t.snap.keys[full]; read && mod == 0 {
			continue // read as missing: the commit checks it still is
		}
		ops = append(ops, clientv3.OpDelete(full))
		marked[t.dels[full]] = true
	}
	for _, full := range sortedKeys(t.puts) {
		ops = append(ops, clientv3.OpPut(full, string(t.puts[full])))
	}
	for _, b := range sortedKeys(marked) {
		ops = append(ops, clientv3.OpPut(t.e.deletionMarker(b), ""))
	}
	return ops, nil
}

func (t *etcdTx) putUnder(fp string) bool {
	for full := range t.puts {
		if strings.HasPrefix(full, fp) {
			return true
		}
	}
	return false
}

// compares are the conditions of the commit on what it read (a fenced
// store adds its fence's). When there are more than fit, they are coarsened to two per bucket read (its whole range
// and its deletion marker): more conflicts, still correct.
func (t *etcdTx) compares() []clientv3.Cmp {
	s := t.snap
	if s.rev == 0 {
		return nil // nothing was read
	}
	var cmps []clientv3.Cmp
	for _, fp := range sortedKeys(s.ranges) {
		cmps = append(cmps, t.rangeCompares(fp, s.ranges[fp])...)
	}
	for _, full := range sortedKeys(s.keys) {
		if !s.inReadRange(full) {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(full), "=", s.keys[full]))
		}
	}
	if len(cmps) <= t.e.maxCompares() {
		return cmps
	}
	buckets := map[Bucket]bool{}
	for _, b := range s.ranges {
		buckets[b] = true
	}
	for full := range s.keys {
		buckets[t.e.bucketOf(full)] = true
	}
	cmps = cmps[:0]
	for _, b := range sortedKeys(buckets) {
		cmps = append(cmps, t.rangeCompares(t.e.bucketPrefix(b), b)...)
	}
	return cmps
}

func (t *etcdTx) rangeCompares(fp string, b Bucket) []clientv3.Cmp {
	next := t.snap.rev + 1
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(fp), "<", next).WithPrefix(),
		clientv3.Compare(clientv3.ModRevision(t.e.deletionMarker(b)), "<", next),
	}
}

// inReadRange reports whether full lies under a prefix the snapshot read
// whole, whose compares already cover it.
func (s *etcdSnapshot) inReadRange(full string) bool {
	for fp := range s.ranges {
		if strings.HasPrefix(full, fp) {
			return true
		}
	}
	return false
}

// bucketOf returns the bucket of an etcd key of this store.
func (e *Etcd) bucketOf(full string) Bucket {
	b, _, _ := strings.Cut(strings.TrimPrefix(full, e.opts.Prefix), "/")
	return Bucket(b)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
