package storage

import (
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// errCompacted marks a read of a revision etcd has compacted away: View and
// Update run fn again on a newer revision.
var errCompacted = errors.New("etcd compacted the transaction's revision")

// etcdSnapshot reads at one revision, the revision of its first read, and
// records what it read so that Update can check at commit that none of it
// changed since.
type etcdSnapshot struct {
	e    *Etcd
	rev  int64 // 0 until the first read
	done bool  // fn has returned: the reader must not be used any more
	// keys maps each etcd key read by Get to the ModRevision seen (0 for a
	// missing key).
	keys map[string]int64
	// ranges maps each etcd key prefix read by List/ListPrefix to its bucket.
	ranges map[string]Bucket
}

var _ Reader = (*etcdSnapshot)(nil)

func newEtcdSnapshot(e *Etcd) *etcdSnapshot {
	return &etcdSnapshot{e: e, keys: map[string]int64{}, ranges: map[string]Bucket{}}
}

// Get returns the value of key in bucket b at the snapshot's revision.
func (s *etcdSnapshot) Get(b Bucket, key string) ([]byte, error) {
	full, err := s.e.key(b, key)
	if err != nil {
		return nil, err
	}
	kv, err := s.get(full)
	if err != nil {
		return nil, fmt.Errorf("get key %q in bucket %s: %w", key, b, err)
	}
	if kv == nil {
		return nil, fmt.Errorf("key %q in bucket %s: %w", key, b, ErrNotFound)
	}
	return append([]byte{}, kv.Value...), nil
}

// List returns every pair of bucket b, sorted by key.
func (s *etcdSnapshot) List(b Bucket) ([]KV, error) { return s.ListPrefix(b, "") }

// ListPrefix returns the pairs of b whose key starts with prefix, sorted by
// key (etcd orders keys bytewise, as Go orders strings).
func (s *etcdSnapshot) ListPrefix(b Bucket, prefix string) ([]KV, error) {
	if err := checkBucket(b); err != nil {
		return nil, err
	}
	bp := s.e.bucketPrefix(b)
	found, err := s.rangePrefix(b, bp+prefix)
	if err != nil {
		return nil, fmt.Errorf("list bucket %s prefix %q: %w", b, prefix, err)
	}
	kvs := make([]KV, 0, len(found))
	for _, kv := range found {
		kvs = append(kvs, KV{Key: strings.TrimPrefix(string(kv.Key), bp), Value: append([]byte{}, kv.Value...)})
	}
	return kvs, nil
}

// get reads one etcd key; a missing key is (nil, nil).
func (s *etcdSnapshot) get(full string) (*mvccpb.KeyValue, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	ctx, cancel := s.e.request()
	defer cancel()
	var opts []clientv3.OpOption
	if s.rev > 0 {
		opts = append(opts, clientv3.WithRev(s.rev))
	}
	resp, err := s.e.client.Get(ctx, full, opts...)
	if err != nil {
		return nil, readError(err)
	}
	if s.rev == 0 {
		s.rev = resp.Header.Revision
	}
	var kv *mvccpb.KeyValue
	if len(resp.Kvs) > 0 {
		kv = resp.Kvs[0]
	}
	if _, seen := s.keys[full]; !seen {
		s.keys[full] = modRevision(kv)
	}
	return kv, nil
}

// rangePrefix reads every etcd key starting with p, ListPageSize keys per
// request, all at the snapshot's revision.
func (s *etcdSnapshot) rangePrefix(b Bucket, p string) ([]*mvccpb.KeyValue, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	end := clientv3.GetPrefixRangeEnd(p)
	var all []*mvccpb.KeyValue
	for from := p; ; {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(s.e.opts.ListPageSize))}
		if s.rev > 0 {
			opts = append(opts, clientv3.WithRev(s.rev))
		}
		ctx, cancel := s.e.request()
		resp, err := s.e.client.Get(ctx, from, opts...)
		cancel()
		if err != nil {
			return nil, readError(err)
		}
		if s.rev == 0 {
			s.rev = resp.Header.Revision
		}
		all = append(all, resp.Kvs...)
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	s.ranges[p] = b
	return all, nil
}

func (s *etcdSnapshot) usable() error {
	if s.done {
		return errors.New("storage: a transaction's reader was used after its function returned")
	}
	if s.e.isClosed() {
		return s.e.closedError()
	}
	return nil
}

func modRevision(kv *mvccpb.KeyValue) int64 {
	if kv == nil {
		return 0
	}
	return kv.ModRevision
}

// readError marks compaction so that the transaction is run again.
func readError(err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) || strings.Contains(err.Error(), "required revision has been compacted") {
		return fmt.Errorf("%w: %w", errCompacted, err)
	}
	return err
}
