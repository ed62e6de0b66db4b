package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// mirrorOf opens a second connection to db's prefix (another replica) and
// mirrors buckets of it until the test ends.
func mirrorOf(t *testing.T, db *storage.Etcd, keyFile string, buckets ...storage.Bucket) *storage.Mirror {
	t.Helper()
	follower := etcdtest.Open(t, storage.EtcdOptions{Prefix: db.Prefix(), KeyFile: keyFile})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m, err := storage.NewMirror(ctx, follower, buckets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func syncMirror(t *testing.T, m *storage.Mirror) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMirrorLoadsAndFollows: the mirror starts with every row of its
// buckets (more than one page of them), and after Sync every write made
// through another connection is visible, deletes included; keys of other
// buckets and other prefixes are not mirrored but do not hold Sync back.
func TestMirrorLoadsAndFollows(t *testing.T) {
	keyFile := t.TempDir() + "/singlecloud.key"
	leader := etcdtest.Open(t, storage.EtcdOptions{KeyFile: keyFile})
	const seeded = 1234
	for i := 0; i < seeded; i += 100 {
		err := leader.Update(func(tx storage.Tx) error {
			for j := i; j < min(i+100, seeded); j++ {
				if err := tx.Put(storage.BucketClusters, fmt.Sprintf("c%05d", j), []byte(fmt.Sprint(j))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	m := mirrorOf(t, leader, keyFile, storage.BucketClusters, storage.BucketOperations)
	kvs, err := m.List(storage.BucketClusters)
	if err != nil || len(kvs) != seeded || kvs[0].Key != "c00000" || string(kvs[seeded-1].Value) != fmt.Sprint(seeded-1) {
		t.Fatalf("loaded %d rows (err %v), want %d in order", len(kvs), err, seeded)
	}

	other := etcdtest.Open(t, storage.EtcdOptions{})
	for i := range 50 {
		v := []byte(fmt.Sprint("v", i))
		if err := leader.Put(storage.BucketClusters, "c00001", v); err != nil {
			t.Fatal(err)
		}
		syncMirror(t, m)
		if got, err := m.Get(storage.BucketClusters, "c00001"); err != nil || string(got) != string(v) {
			t.Fatalf("round %d: read %q (err %v) right after writing %q", i, got, err, v)
		}
		// Writes the mirror has no event for: Sync must still end.
		if err := leader.Put(storage.BucketUsers, "u", v); err != nil {
			t.Fatal(err)
		}
		if err := other.Put(storage.BucketClusters, "x", v); err != nil {
			t.Fatal(err)
		}
		syncMirror(t, m)
	}
	if _, err := m.Get(storage.BucketUsers, "u"); !errors.Is(err, storage.ErrUnknownBucket) {
		t.Errorf("a bucket not mirrored answered (err %v)", err)
	}

	before, _ := m.Rows(storage.BucketClusters, "c00002")
	if err := leader.Put(storage.BucketClusters, "c00002", []byte("changed")); err != nil {
		t.Fatal(err)
	}
	err = leader.Update(func(tx storage.Tx) error {
		if err := tx.Delete(storage.BucketClusters, "c00003"); err != nil {
			return err
		}
		if err := tx.Put(storage.BucketOperations, "c00003/1", []byte("op")); err != nil {
			return err
		}
		return tx.DeletePrefix(storage.BucketClusters, "c001")
	})
	if err != nil {
		t.Fatal(err)
	}
	syncMirror(t, m)
	after, _ := m.Rows(storage.BucketClusters, "c00002")
	if len(before) != 1 || len(after) != 1 || after[0].ModRevision <= before[0].ModRevision || string(after[0].Value) != "changed" {
		t.Errorf("row c00002 before %+v, after %+v: want a newer revision and the new value", before, after)
	}
	if _, err := m.Get(storage.BucketClusters, "c00003"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("deleted key still read (err %v)", err)
	}
	if rows, _ := m.Rows(storage.BucketClusters, "c001"); len(rows) != 0 {
		t.Errorf("%d keys left under a deleted prefix", len(rows))
	}
	if rows, _ := m.RowsFrom(storage.BucketClusters, "c0", "c01233"); len(rows) != 1 || rows[0].Key != "c01233" {
		t.Errorf("rows from c01233: %+v", rows)
	}
	if kvs, _ := m.ListPrefix(storage.BucketOperations, "c00003/"); len(kvs) != 1 || string(kvs[0].Value) != "op" {
		t.Errorf("operations of c00003: %+v", kvs)
	}
	if kvs, _ := m.List(storage.BucketClusters); len(kvs) != seeded-1-100 {
		t.Errorf("%d clusters mirrored, want %d", len(kvs), seeded-1-100)
	}
	if m.Revision() == 0 {
		t.Error("revision 0 after writes")
	}
}

// TestMirrorRefusesWrites: every write fails with ErrReadOnly and changes
// nothing.
func TestMirrorRefusesWrites(t *testing.T) {
	keyFile := t.TempDir() + "/singlecloud.key"
	leader := etcdtest.Open(t, storage.EtcdOptions{KeyFile: keyFile})
	m := mirrorOf(t, leader, keyFile, storage.BucketClusters)
	for name, err := range map[string]error{
		"put":    m.Put(storage.BucketClusters, "a", []byte("1")),
		"delete": m.Delete(storage.BucketClusters, "a"),
		"update": m.Update(func(tx storage.Tx) error { return tx.Put(storage.BucketClusters, "a", nil) }),
	} {
		if !errors.Is(err, storage.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	syncMirror(t, m)
	if _, err := leader.Get(storage.BucketClusters, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a refused write landed (err %v)", err)
	}
}

// TestMirrorSyncIsBounded: Sync of a closed mirror ends at once with
// ErrClosed, saying which revision it waited for.
func TestMirrorSyncIsBounded(t *testing.T) {
	keyFile := t.TempDir() + "/singlecloud.key"
	leader := etcdtest.Open(t, storage.EtcdOptions{KeyFile: keyFile})
	m := mirrorOf(t, leader, keyFile, storage.BucketClusters)
	_ = m.Close()
	if err := leader.Put(storage.BucketClusters, "late", []byte("1")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := m.Sync(ctx); !errors.Is(err, storage.ErrClosed) || ctx.Err() != nil {
		t.Fatalf("Sync of a stopped mirror: %v, want ErrClosed before the deadline", err)
	}
}
