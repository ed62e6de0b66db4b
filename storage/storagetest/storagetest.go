// Package storagetest gives other packages' tests a real bbolt Store in a
// temporary directory, so they test against the database singlecloud runs
// on rather than a mock.
package storagetest

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

// Open returns a new, empty *storage.Bolt (with its key file) in t's
// temporary directory. It fails the test if the database cannot be opened,
// and closes the database when the test ends; a test may close it earlier.
func Open(t testing.TB) *storage.Bolt {
	t.Helper()
	db, err := storage.OpenBolt(filepath.Join(t.TempDir(), "singlecloud.db"), storage.BoltOptions{})
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Errorf("storagetest: %v", err)
		}
	})
	return db
}
