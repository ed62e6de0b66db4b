package storage

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

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

func TestBoltCRUD(t *testing.T) {
	db, _ := openTest(t)

	if _, err := db.Get(BucketClusters, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: error = %v, want ErrNotFound", err)
	}
	if err := db.Put(BucketClusters, "c1", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, BucketClusters, "c1", "v1")
	if err := db.Put(BucketClusters, "c1", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, BucketClusters, "c1", "v2")
	// The same key in another bucket is another key.
	if _, err := db.Get(BucketUsers, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get in another bucket: error = %v, want ErrNotFound", err)
	}
	if err := db.Delete(BucketClusters, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(BucketClusters, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: error = %v, want ErrNotFound", err)
	}
	if err := db.Delete(BucketClusters, "c1"); err != nil {
		t.Fatalf("Delete of a missing key: %v, want nil", err)
	}
}

func TestBoltEmptyValue(t *testing.T) {
	db, _ := openTest(t)
	for _, v := range [][]byte{nil, {}} {
		if err := db.Put(BucketUsers, "u", v); err != nil {
			t.Fatal(err)
		}
		got, err := db.Get(BucketUsers, "u")
		if err != nil || len(got) != 0 {
			t.Fatalf("Get after Put(%#v) = %q, %v; want an empty value, no error", v, got, err)
		}
	}
}

func TestBoltReturnedBytesBelongToCaller(t *testing.T) {
	db, _ := openTest(t)
	in := []byte("original")
	if err := db.Put(BucketClusters, "c", in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X' // the store must have copied the value
	got, err := db.Get(BucketClusters, "c")
	if err != nil {
		t.Fatal(err)
	}
	got[0] = 'Y'
	kvs, err := db.List(BucketClusters)
	if err != nil {
		t.Fatal(err)
	}
	kvs[0].Value[1] = 'Z'
	// Reading after more writes also checks that returned slices do not
	// alias bbolt's memory map.
	for i := range 50 {
		if err := db.Put(BucketClusters, fmt.Sprintf("k%03d", i), bytes.Repeat([]byte{'x'}, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(t, db, BucketClusters, "c", "original")
	if string(got) != "Yriginal" || string(kvs[0].Value) != "oZiginal" {
		t.Errorf("returned values changed under the caller: %q, %q", got, kvs[0].Value)
	}
}

func TestBoltListSorted(t *testing.T) {
	db, _ := openTest(t)
	empty, err := db.List(BucketOperations)
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("List of an empty bucket = %#v, %v; want an empty non-nil slice", empty, err)
	}
	keys := []string{"b", "a", "B", "aa", "a-1", "z", "0", "c1"}
	for _, k := range keys {
		if err := db.Put(BucketClusters, k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put(BucketUsers, "other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	kvs, err := db.List(BucketClusters)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(keys))
	var got []string
	for _, kv := range kvs {
		got = append(got, kv.Key)
		if string(kv.Value) != "v-"+kv.Key {
			t.Errorf("value of %q = %q, want %q", kv.Key, kv.Value, "v-"+kv.Key)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("List keys = %q, want %q", got, want)
	}
}

func TestBoltUnknownBucket(t *testing.T) {
	db, _ := openTest(t)
	const nope Bucket = "nope"
	_, getErr := db.Get(nope, "k")
	_, listErr := db.List(nope)
	for name, err := range map[string]error{
		"Get":    getErr,
		"List":   listErr,
		"Put":    db.Put(nope, "k", []byte("v")),
		"Delete": db.Delete(nope, "k"),
	} {
		if !errors.Is(err, ErrUnknownBucket) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s on an unknown bucket: error = %v, want ErrUnknownBucket naming it", name, err)
		}
	}
}

func TestBoltUpdateIsAtomic(t *testing.T) {
	db, _ := openTest(t)
	if err := db.Put(BucketClusters, "keep", []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := db.Update(func(tx Tx) error {
		if err := tx.Put(BucketClusters, "c1", []byte("v")); err != nil {
			return err
		}
		if err := tx.Put(BucketOperations, "c1", []byte("step")); err != nil {
			return err
		}
		if err := tx.Put(BucketClusters, "keep", []byte("new")); err != nil {
			return err
		}
		if err := tx.Delete(BucketClusters, "keep"); err != nil {
			return err
		}
		// Reads inside the transaction see its own writes.
		if _, err := tx.Get(BucketClusters, "c1"); err != nil {
			return fmt.Errorf("read own write: %w", err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want fn's error", err)
	}
	for _, k := range []struct {
		b   Bucket
		key string
	}{{BucketClusters, "c1"}, {BucketOperations, "c1"}} {
		if _, err := db.Get(k.b, k.key); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s/%s after a failed Update: error = %v, want ErrNotFound", k.b, k.key, err)
		}
	}
	mustGet(t, db, BucketClusters, "keep", "old")

	err = db.Update(func(tx Tx) error {
		if err := tx.Put(BucketClusters, "c1", []byte("v")); err != nil {
			return err
		}
		return tx.Put(BucketOperations, "c1", []byte("step"))
	})
	if err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, BucketClusters, "c1", "v")
	mustGet(t, db, BucketOperations, "c1", "step")
}

func TestBoltViewIsSnapshot(t *testing.T) {
	db, _ := openTest(t)
	// Grow bbolt's memory map first: a writer that must remap waits for
	// open readers, which would deadlock this test's reader-waits-for-writer.
	if err := db.Put(BucketOperationLogs, "big", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(BucketOperationLogs, "big"); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(BucketClusters, "c1", []byte("before")); err != nil {
		t.Fatal(err)
	}

	err := db.View(func(r Reader) error {
		written := make(chan error, 1)
		go func() {
			err := db.Put(BucketClusters, "c1", []byte("after"))
			if err == nil {
				err = db.Put(BucketClusters, "c2", []byte("new"))
			}
			written <- err
		}()
		select {
		case err := <-written:
			if err != nil {
				return err
			}
		case <-time.After(10 * time.Second):
			return errors.New("a write did not finish while a reader was open")
		}
		v, err := r.Get(BucketClusters, "c1")
		if err != nil || string(v) != "before" {
			return fmt.Errorf("snapshot read c1 = %q, %v; want %q", v, err, "before")
		}
		kvs, err := r.List(BucketClusters)
		if err != nil || len(kvs) != 1 {
			return fmt.Errorf("snapshot List = %v, %v; want only c1", kvs, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, BucketClusters, "c1", "after")
	mustGet(t, db, BucketClusters, "c2", "new")
}

func TestBoltConcurrentUse(t *testing.T) {
	db, _ := openTest(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8*50)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("g%d-%02d", g, i)
				if err := db.Put(BucketClusters, key, []byte(key)); err != nil {
					errs <- err
					return
				}
				if v, err := db.Get(BucketClusters, key); err != nil || string(v) != key {
					errs <- fmt.Errorf("Get %s = %q, %v", key, v, err)
					return
				}
				if _, err := db.List(BucketClusters); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	kvs, err := db.List(BucketClusters)
	if err != nil || len(kvs) != 8*50 {
		t.Fatalf("List after concurrent puts: %d pairs, %v; want %d", len(kvs), err, 8*50)
	}
}

func TestBoltErrClosed(t *testing.T) {
	db, _ := openTest(t)
	if err := db.Put(BucketClusters, "c1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, getErr := db.Get(BucketClusters, "c1")
	_, listErr := db.List(BucketClusters)
	calls := map[string]error{
		"Get":    getErr,
		"List":   listErr,
		"Put":    db.Put(BucketClusters, "c1", []byte("v")),
		"Delete": db.Delete(BucketClusters, "c1"),
		"Update": db.Update(func(Tx) error { return nil }),
		"View":   db.View(func(Reader) error { return nil }),
		"Close":  db.Close(),
	}
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: error = %v, want ErrClosed", name, err)
		}
	}
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

func TestPrefixes(t *testing.T) {
	s, _ := openTest(t)
	for _, k := range []string{"a/1", "a/2", "ab/1", "b/1", "a"} {
		if err := s.Put(BucketOperationLogs, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"a/", []string{"a/1", "a/2"}},
		{"a", []string{"a", "a/1", "a/2", "ab/1"}},
		{"c", nil},
		{"", []string{"a", "a/1", "a/2", "ab/1", "b/1"}},
	}
	for _, tc := range cases {
		kvs, err := s.ListPrefix(BucketOperationLogs, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, kv := range kvs {
			got = append(got, kv.Key)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("ListPrefix(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
	if err := s.Update(func(tx Tx) error { return tx.DeletePrefix(BucketOperationLogs, "a/") }); err != nil {
		t.Fatal(err)
	}
	kvs, _ := s.List(BucketOperationLogs)
	if len(kvs) != 3 || kvs[0].Key != "a" || kvs[1].Key != "ab/1" {
		t.Errorf("after DeletePrefix(a/): %v", kvs)
	}
	if _, err := s.ListPrefix("nope", ""); !errors.Is(err, ErrUnknownBucket) {
		t.Errorf("unknown bucket: %v", err)
	}
}
