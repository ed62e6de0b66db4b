package storage

import (
	"path/filepath"
	"testing"
)

// The backend-independent tests of the Store contract are in
// storagetest.RunStoreSuite, run for bbolt and etcd by store_suite_test.go.
// This file keeps the helpers of the bbolt-specific tests (bolt_open_test.go).

// openTest opens a new database in a temporary directory and closes it when
// the test ends. (storagetest.Open cannot be used here: it imports storage.)
func openTest(t *testing.T) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "singlecloud.db")
	db, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func mustGet(t *testing.T, db *Bolt, b Bucket, key, want string) {
	t.Helper()
	got, err := db.Get(b, key)
	if err != nil {
		t.Fatalf("Get %s/%s: %v", b, key, err)
	}
	if string(got) != want {
		t.Fatalf("Get %s/%s = %q, want %q", b, key, got, want)
	}
}
