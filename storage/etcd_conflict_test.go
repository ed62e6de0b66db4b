package storage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// The conflict tests of Etcd.Update: what a transaction read must be
// unchanged at its commit, or fn runs again.

// TestEtcdConflictGivesUp: a transaction that conflicts on every attempt
// fails with ErrConflict after UpdateAttempts runs and writes nothing.
func TestEtcdConflictGivesUp(t *testing.T) {
	dbs := replicas(t, 2, storage.EtcdOptions{UpdateAttempts: 3})
	db, other := dbs[0], dbs[1]
	runs := 0
	err := db.Update(func(tx storage.Tx) error {
		runs++
		if _, err := tx.Get(storage.BucketClusters, "hot"); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if err := other.Put(storage.BucketClusters, "hot", []byte(strconv.Itoa(runs))); err != nil {
			return err
		}
		return tx.Put(storage.BucketClusters, "mine", []byte("x"))
	})
	if !errors.Is(err, storage.ErrConflict) || runs != 3 {
		t.Fatalf("Update = %v after %d runs; want ErrConflict after 3", err, runs)
	}
	if _, err := db.Get(storage.BucketClusters, "mine"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a conflicting transaction's write landed: %v", err)
	}
}

// conflictCase runs fn in an Update; on its first run, after fn's reads,
// interfere writes through another replica. It returns how often fn ran.
func conflictCase(t *testing.T, db, other storage.Store, read func(storage.Tx) error, interfere func(storage.Store) error) int {
	t.Helper()
	runs := 0
	err := db.Update(func(tx storage.Tx) error {
		runs++
		if err := read(tx); err != nil {
			return err
		}
		if runs == 1 {
			if err := interfere(other); err != nil {
				return err
			}
		}
		return tx.Put(storage.BucketHosts, "result", []byte(strconv.Itoa(runs)))
	})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestEtcdReadOfMissingKeyConflictsWithCreate: a transaction that saw a key
// missing must not commit after someone else created it.
func TestEtcdReadOfMissingKeyConflictsWithCreate(t *testing.T) {
	dbs := replicas(t, 2, storage.EtcdOptions{})
	var sawMissing []bool
	runs := conflictCase(t, dbs[0], dbs[1], func(tx storage.Tx) error {
		_, err := tx.Get(storage.BucketClusters, "c1")
		sawMissing = append(sawMissing, errors.Is(err, storage.ErrNotFound))
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}, func(s storage.Store) error { return s.Put(storage.BucketClusters, "c1", []byte("created")) })
	if runs != 2 || !slices.Equal(sawMissing, []bool{true, false}) {
		t.Fatalf("runs = %d, saw missing = %v; want a retry that sees the created key", runs, sawMissing)
	}
}

// TestEtcdReadKeyConflicts: modifying or deleting a key read conflicts;
// writing a key not read does not.
func TestEtcdReadKeyConflicts(t *testing.T) {
	dbs := replicas(t, 2, storage.EtcdOptions{})
	for _, k := range []string{"a", "b"} {
		if err := dbs[0].Put(storage.BucketClusters, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	read := func(tx storage.Tx) error { _, err := tx.Get(storage.BucketClusters, "a"); return err }
	for name, tc := range map[string]struct {
		interfere func(storage.Store) error
		runs      int
	}{
		"modify": {func(s storage.Store) error { return s.Put(storage.BucketClusters, "a", []byte("w")) }, 2},
		"delete and recreate": {func(s storage.Store) error {
			if err := s.Delete(storage.BucketClusters, "a"); err != nil {
				return err
			}
			return s.Put(storage.BucketClusters, "a", []byte("w"))
		}, 2},
		"other key": {func(s storage.Store) error { return s.Put(storage.BucketClusters, "b", []byte("w")) }, 1},
	} {
		if runs := conflictCase(t, dbs[0], dbs[1], read, tc.interfere); runs != tc.runs {
			t.Errorf("%s: fn ran %d times, want %d", name, runs, tc.runs)
		}
	}
	// A deleted key makes the retry fail on its read.
	runs := 0
	err := dbs[0].Update(func(tx storage.Tx) error {
		runs++
		if err := read(tx); err != nil {
			return err
		}
		if runs == 1 {
			return errors.Join(dbs[1].Delete(storage.BucketClusters, "a"), tx.Put(storage.BucketHosts, "x", nil))
		}
		return nil
	})
	if !errors.Is(err, storage.ErrNotFound) || runs != 2 {
		t.Fatalf("Update after a concurrent delete = %v after %d runs; want the retry's ErrNotFound", err, runs)
	}
}

// TestEtcdListPrefixReadConflicts: a key created, modified or deleted
// under a prefix a transaction listed conflicts; a write elsewhere in
// another bucket does not.
func TestEtcdListPrefixReadConflicts(t *testing.T) {
	dbs := replicas(t, 2, storage.EtcdOptions{})
	for _, k := range []string{"a/1", "a/2", "b/1"} {
		if err := dbs[0].Put(storage.BucketOperations, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	list := func(tx storage.Tx) error { _, err := tx.ListPrefix(storage.BucketOperations, "a/"); return err }
	put := func(k string) func(storage.Store) error {
		return func(s storage.Store) error { return s.Put(storage.BucketOperations, k, []byte("w")) }
	}
	cases := []struct {
		name      string
		interfere func(storage.Store) error
		runs      int
	}{
		{"create under the prefix", put("a/3"), 2},
		{"modify under the prefix", put("a/1"), 2},
		{"delete under the prefix", func(s storage.Store) error { return s.Delete(storage.BucketOperations, "a/2") }, 2},
		{"delete prefix", func(s storage.Store) error {
			return s.Update(func(tx storage.Tx) error { return tx.DeletePrefix(storage.BucketOperations, "a/") })
		}, 2},
		{"write outside the prefix", put("b/2"), 1},
		{"write in another bucket", func(s storage.Store) error { return s.Put(storage.BucketUsers, "a/1", nil) }, 1},
	}
	for _, tc := range cases {
		if runs := conflictCase(t, dbs[0], dbs[1], list, tc.interfere); runs != tc.runs {
			t.Errorf("%s: fn ran %d times, want %d", tc.name, runs, tc.runs)
		}
	}
}

// TestEtcdManyReadsCoarsened: a transaction that read more keys than one
// etcd transaction may compare still commits, and still conflicts.
func TestEtcdManyReadsCoarsened(t *testing.T) {
	dbs := replicas(t, 2, storage.EtcdOptions{})
	for i := range 3 {
		if err := dbs[0].Update(func(tx storage.Tx) error {
			for j := range 100 {
				if err := tx.Put(storage.BucketUsers, fmt.Sprintf("u%03d", i*100+j), []byte("v")); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func(tx storage.Tx) error {
		for i := range 300 {
			if _, err := tx.Get(storage.BucketUsers, fmt.Sprintf("u%03d", i)); err != nil {
				return err
			}
		}
		return nil
	}
	if runs := conflictCase(t, dbs[0], dbs[1], readAll, func(storage.Store) error { return nil }); runs != 1 {
		t.Errorf("no interference: fn ran %d times, want 1", runs)
	}
	if runs := conflictCase(t, dbs[0], dbs[1], readAll, func(s storage.Store) error {
		return s.Put(storage.BucketUsers, "u150", []byte("w"))
	}); runs != 2 {
		t.Errorf("one of 300 read keys modified: fn ran %d times, want 2", runs)
	}
}

// TestEtcdCompactionReruns: when etcd compacts away the revision a View or
// an Update reads at, fn runs again on a newer revision instead of failing.
func TestEtcdCompactionReruns(t *testing.T) {
	db := etcdtest.Open(t, storage.EtcdOptions{})
	if err := db.Put(storage.BucketClusters, "c1", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	compactOnce := func(runs int) error {
		if runs > 1 {
			return nil
		}
		if err := db.Put(storage.BucketClusters, "c1", []byte("v2")); err != nil {
			return err
		}
		resp, err := db.Client().Get(context.Background(), "any")
		if err != nil {
			return err
		}
		_, err = db.Client().Compact(context.Background(), resp.Header.Revision)
		return err
	}
	viewRuns := 0
	err := db.View(func(r storage.Reader) error {
		viewRuns++
		if _, err := r.Get(storage.BucketClusters, "c1"); err != nil {
			return err
		}
		if err := compactOnce(viewRuns); err != nil {
			return err
		}
		_, err := r.List(storage.BucketClusters)
		return err
	})
	if err != nil || viewRuns != 2 {
		t.Fatalf("View across a compaction = %v after %d runs; want success on the second run", err, viewRuns)
	}
	updateRuns := 0
	err = db.Update(func(tx storage.Tx) error {
		updateRuns++
		if _, err := tx.Get(storage.BucketClusters, "c1"); err != nil {
			return err
		}
		if err := compactOnce(updateRuns); err != nil {
			return err
		}
		if _, err := tx.Get(storage.BucketUsers, "u"); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		return tx.Put(storage.BucketUsers, "u", []byte("x"))
	})
	if err != nil || updateRuns != 2 {
		t.Fatalf("Update across a compaction = %v after %d runs; want success on the second run", err, updateRuns)
	}
}
