package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// The fenced view of Etcd: every write is conditioned on a leadership.

// elect campaigns on db's prefix with a session of its own and returns the
// leadership's fence and the session (closed when the test ends).
func elect(t testing.TB, db *storage.Etcd) (storage.Fence, *concurrency.Session) {
	t.Helper()
	sess, err := concurrency.NewSession(db.Client(), concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	el := concurrency.NewElection(sess, db.Prefix()+".election")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := el.Campaign(ctx, "http://replica"); err != nil {
		t.Fatal(err)
	}
	return storage.Fence{Key: el.Key(), CreateRevision: el.Rev()}, sess
}

// fencedOutNow reports whether db's FencedOut is closed.
func fencedOutNow(db *storage.Etcd) bool {
	select {
	case <-db.FencedOut():
		return true
	default:
		return false
	}
}

// TestEtcdFencedWritesNeedTheLeadership: a fenced view writes while its
// leader key exists with its create revision; once the key is gone
// (lease revoked), or recreated by another campaign, every kind of write is
// refused with ErrNotLeader, nothing of it lands, and FencedOut is closed.
// Reads go on.
func TestEtcdFencedWritesNeedTheLeadership(t *testing.T) {
	writes := map[string]func(storage.Store) error{
		"put":    func(s storage.Store) error { return s.Put(storage.BucketClusters, "late", []byte("x")) },
		"delete": func(s storage.Store) error { return s.Delete(storage.BucketClusters, "kept") },
		"update after a read": func(s storage.Store) error {
			return s.Update(func(tx storage.Tx) error {
				if _, err := tx.Get(storage.BucketClusters, "kept"); err != nil {
					return err
				}
				return tx.Put(storage.BucketClusters, "late", []byte("x"))
			})
		},
		"delete prefix": func(s storage.Store) error {
			return s.Update(func(tx storage.Tx) error { return tx.DeletePrefix(storage.BucketClusters, "") })
		},
	}
	for name, lose := range map[string]func(t *testing.T, db *storage.Etcd, f storage.Fence, sess *concurrency.Session){
		"lease revoked": func(t *testing.T, _ *storage.Etcd, _ storage.Fence, sess *concurrency.Session) {
			if err := sess.Close(); err != nil {
				t.Fatal(err)
			}
		},
		"key recreated by another campaign": func(t *testing.T, db *storage.Etcd, f storage.Fence, _ *concurrency.Session) {
			if _, err := db.Client().Delete(context.Background(), f.Key); err != nil {
				t.Fatal(err)
			}
			if _, err := db.Client().Put(context.Background(), f.Key, "http://another"); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			db := replicas(t, 1, storage.EtcdOptions{})[0]
			f, sess := elect(t, db)
			fenced, err := db.Fenced(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := fenced.Put(storage.BucketClusters, "kept", []byte("v")); err != nil {
				t.Fatalf("a write while leading: %v", err)
			}
			if fencedOutNow(fenced) {
				t.Fatal("FencedOut closed while leading")
			}
			lose(t, db, f, sess)
			for wname, write := range writes {
				if err := write(fenced); !errors.Is(err, storage.ErrNotLeader) {
					t.Errorf("%s after the leadership ended = %v, want ErrNotLeader", wname, err)
				}
			}
			if !fencedOutNow(fenced) {
				t.Error("FencedOut not closed after a refused write")
			}
			storagetest.MustGet(t, fenced, storage.BucketClusters, "kept", "v")
			if _, err := db.Get(storage.BucketClusters, "late"); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("a refused write landed: %v", err)
			}
			// The store it was made from is not fenced.
			if err := db.Put(storage.BucketClusters, "unfenced", nil); err != nil {
				t.Errorf("the parent store after its view was fenced out: %v", err)
			}
		})
	}
}

// TestEtcdFencedConflictStillRetries: while the leadership holds, a
// conflict of a fenced Update is retried as an unfenced one is, not taken
// for a lost leadership.
func TestEtcdFencedConflictStillRetries(t *testing.T) {
	dbs := replicas(t, 2, storage.EtcdOptions{})
	f, _ := elect(t, dbs[0])
	fenced, err := dbs[0].Fenced(f)
	if err != nil {
		t.Fatal(err)
	}
	if runs := conflictCase(t, fenced, dbs[1], func(tx storage.Tx) error {
		_, err := tx.Get(storage.BucketClusters, "c1")
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}, func(s storage.Store) error { return s.Put(storage.BucketClusters, "c1", []byte("x")) }); runs != 2 {
		t.Fatalf("fn ran %d times, want 2 (one conflict, then the commit)", runs)
	}
	if fencedOutNow(fenced) {
		t.Fatal("a conflict closed FencedOut")
	}
}

// TestEtcdFencedViewLifecycle: a fence needs a key and a revision; closing
// the view leaves its parent open; closing the parent closes the view.
func TestEtcdFencedViewLifecycle(t *testing.T) {
	db := replicas(t, 1, storage.EtcdOptions{})[0]
	if _, err := db.Fenced(storage.Fence{Key: "k"}); err == nil {
		t.Fatal("Fenced without a create revision succeeded")
	}
	f, _ := elect(t, db)
	view, err := db.Fenced(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := view.Close(); err != nil {
		t.Fatal(err)
	}
	if err := view.Put(storage.BucketClusters, "x", nil); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Put on a closed view = %v, want ErrClosed", err)
	}
	if err := db.Put(storage.BucketClusters, "x", nil); err != nil {
		t.Fatalf("the parent after its view closed: %v", err)
	}
	view2, err := db.Fenced(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := view2.Get(storage.BucketClusters, "x"); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Get on a view of a closed store = %v, want ErrClosed", err)
	}
}
