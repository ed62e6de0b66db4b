package storagetest

import (
	"errors"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

func TestOpenGivesFreshStoreClosedAtCleanup(t *testing.T) {
	var db *storage.Bolt
	t.Run("user", func(t *testing.T) {
		db = Open(t)
		if err := db.Put(storage.BucketClusters, "c1", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if kvs, err := db.List(storage.BucketClusters); err != nil || len(kvs) != 1 {
			t.Fatalf("List = %v, %v; want the one pair written", kvs, err)
		}
		other := Open(t)
		if kvs, err := other.List(storage.BucketClusters); err != nil || len(kvs) != 0 {
			t.Fatalf("second store List = %v, %v; want an empty, separate store", kvs, err)
		}
	})
	if _, err := db.Get(storage.BucketClusters, "c1"); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Get after the test ended: error = %v, want ErrClosed", err)
	}
}

func TestOpenToleratesEarlyClose(t *testing.T) {
	db := Open(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The cleanup's second Close must not fail the test.
}
