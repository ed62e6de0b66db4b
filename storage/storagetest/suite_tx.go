package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

// The transaction tests of RunStoreSuite: atomicity, reads of a
// transaction's own writes, prefix deletes.

func testUpdateIsAtomic(t *testing.T, db storage.Store) {
	if err := db.Put(storage.BucketClusters, "keep", []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := db.Update(func(tx storage.Tx) error {
		if err := tx.Put(storage.BucketClusters, "c1", []byte("v")); err != nil {
			return err
		}
		if err := tx.Put(storage.BucketOperations, "c1", []byte("step")); err != nil {
			return err
		}
		if err := tx.Put(storage.BucketClusters, "keep", []byte("new")); err != nil {
			return err
		}
		if err := tx.Delete(storage.BucketClusters, "keep"); err != nil {
			return err
		}
		// Reads inside the transaction see its own writes.
		if _, err := tx.Get(storage.BucketClusters, "c1"); err != nil {
			return fmt.Errorf("read own write: %w", err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want fn's error", err)
	}
	for _, k := range []struct {
		b   storage.Bucket
		key string
	}{{storage.BucketClusters, "c1"}, {storage.BucketOperations, "c1"}} {
		if _, err := db.Get(k.b, k.key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s/%s after a failed Update: error = %v, want ErrNotFound", k.b, k.key, err)
		}
	}
	MustGet(t, db, storage.BucketClusters, "keep", "old")

	err = db.Update(func(tx storage.Tx) error {
		if err := tx.Put(storage.BucketClusters, "c1", []byte("v")); err != nil {
			return err
		}
		return tx.Put(storage.BucketOperations, "c1", []byte("step"))
	})
	if err != nil {
		t.Fatal(err)
	}
	MustGet(t, db, storage.BucketClusters, "c1", "v")
	MustGet(t, db, storage.BucketOperations, "c1", "step")
}

// testUpdateReadsOwnWrites checks every read of a Tx against its puts,
// deletes and prefix deletes, then the committed result.
func testUpdateReadsOwnWrites(t *testing.T, db storage.Store) {
	for _, k := range []string{"a", "b", "x/1", "x/2", "y"} {
		if err := db.Put(storage.BucketOperationLogs, k, []byte("old-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"a=new-a", "c=new-c", "x/3=new-x/3", "y=old-y"}
	err := db.Update(func(tx storage.Tx) error {
		steps := []error{
			tx.Put(storage.BucketOperationLogs, "a", []byte("new-a")),
			tx.Delete(storage.BucketOperationLogs, "b"),
			tx.Put(storage.BucketOperationLogs, "c", []byte("new-c")),
			tx.Put(storage.BucketOperationLogs, "x/0", []byte("gone")),
			tx.DeletePrefix(storage.BucketOperationLogs, "x/"),
			tx.Put(storage.BucketOperationLogs, "x/3", []byte("new-x/3")),
		}
		if err := errors.Join(steps...); err != nil {
			return err
		}
		if _, err := tx.Get(storage.BucketOperationLogs, "b"); !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("Get of a key deleted in the tx: %v, want ErrNotFound", err)
		}
		if _, err := tx.Get(storage.BucketOperationLogs, "x/1"); !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("Get of a key under a prefix deleted in the tx: %v, want ErrNotFound", err)
		}
		MustGet(t, tx, storage.BucketOperationLogs, "x/3", "new-x/3")
		kvs, err := tx.List(storage.BucketOperationLogs)
		if err != nil {
			return err
		}
		if got := pairs(kvs); !slices.Equal(got, want) {
			return fmt.Errorf("List in the tx = %q, want %q", got, want)
		}
		kvs, err = tx.ListPrefix(storage.BucketOperationLogs, "x/")
		if err != nil {
			return err
		}
		if got := pairs(kvs); !slices.Equal(got, []string{"x/3=new-x/3"}) {
			return fmt.Errorf("ListPrefix(x/) in the tx = %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := db.List(storage.BucketOperationLogs)
	if err != nil {
		t.Fatal(err)
	}
	if got := pairs(kvs); !slices.Equal(got, want) {
		t.Errorf("List after commit = %q, want %q", got, want)
	}
}

// testDeletePrefixThenPut: a transaction may empty a prefix and refill it.
func testDeletePrefixThenPut(t *testing.T, db storage.Store) {
	for _, k := range []string{"p/1", "p/2", "p/3", "q/1"} {
		if err := db.Put(storage.BucketApplicationLogs, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	err := db.Update(func(tx storage.Tx) error {
		return errors.Join(tx.DeletePrefix(storage.BucketApplicationLogs, "p/"),
			tx.Put(storage.BucketApplicationLogs, "p/2", []byte("again")),
			tx.Put(storage.BucketApplicationLogs, "p/9", []byte("new")))
	})
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := db.List(storage.BucketApplicationLogs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pairs(kvs), []string{"p/2=again", "p/9=new", "q/1=q/1"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}
