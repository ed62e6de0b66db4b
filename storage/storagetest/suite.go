package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

// RunStoreSuite checks that the Stores open returns keep the contract of
// storage.Store (store.go). open must return a new, empty Store for each
// call and close it when t ends (tolerating an earlier Close). Every backend
// runs it: bbolt and etcd must behave alike.
func RunStoreSuite(t *testing.T, open func(t *testing.T) storage.Store) {
	tests := []struct {
		name string
		run  func(*testing.T, storage.Store)
	}{
		{"CRUD", testCRUD},
		{"EmptyValue", testEmptyValue},
		{"ReturnedBytesBelongToCaller", testReturnedBytesBelongToCaller},
		{"ListSorted", testListSorted},
		{"UnknownBucket", testUnknownBucket},
		{"UpdateIsAtomic", testUpdateIsAtomic},
		{"UpdateReadsOwnWrites", testUpdateReadsOwnWrites},
		{"DeletePrefixThenPut", testDeletePrefixThenPut},
		{"ViewIsSnapshot", testViewIsSnapshot},
		{"ConcurrentUse", testConcurrentUse},
		{"ErrClosed", testErrClosed},
		{"Prefixes", testPrefixes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open(t)) })
	}
}

// MustGet fails t unless key of bucket b holds want.
func MustGet(t testing.TB, db storage.Reader, b storage.Bucket, key, want string) {
	t.Helper()
	got, err := db.Get(b, key)
	if err != nil {
		t.Fatalf("Get %s/%s: %v", b, key, err)
	}
	if string(got) != want {
		t.Fatalf("Get %s/%s = %q, want %q", b, key, got, want)
	}
}

// Keys returns the keys of kvs, in order.
func Keys(kvs []storage.KV) []string {
	keys := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		keys = append(keys, kv.Key)
	}
	return keys
}

func testCRUD(t *testing.T, db storage.Store) {
	if _, err := db.Get(storage.BucketClusters, "c1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get of a missing key: error = %v, want ErrNotFound", err)
	}
	if err := db.Put(storage.BucketClusters, "c1", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	MustGet(t, db, storage.BucketClusters, "c1", "v1")
	if err := db.Put(storage.BucketClusters, "c1", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	MustGet(t, db, storage.BucketClusters, "c1", "v2")
	// The same key in another bucket is another key.
	if _, err := db.Get(storage.BucketUsers, "c1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get in another bucket: error = %v, want ErrNotFound", err)
	}
	if err := db.Delete(storage.BucketClusters, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(storage.BucketClusters, "c1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get after Delete: error = %v, want ErrNotFound", err)
	}
	if err := db.Delete(storage.BucketClusters, "c1"); err != nil {
		t.Fatalf("Delete of a missing key: %v, want nil", err)
	}
}

func testEmptyValue(t *testing.T, db storage.Store) {
	for _, v := range [][]byte{nil, {}} {
		if err := db.Put(storage.BucketUsers, "u", v); err != nil {
			t.Fatal(err)
		}
		got, err := db.Get(storage.BucketUsers, "u")
		if err != nil || len(got) != 0 {
			t.Fatalf("Get after Put(%#v) = %q, %v; want an empty value, no error", v, got, err)
		}
	}
}

func testReturnedBytesBelongToCaller(t *testing.T, db storage.Store) {
	in := []byte("original")
	if err := db.Put(storage.BucketClusters, "c", in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X' // the store must have copied the value
	got, err := db.Get(storage.BucketClusters, "c")
	if err != nil {
		t.Fatal(err)
	}
	got[0] = 'Y'
	kvs, err := db.List(storage.BucketClusters)
	if err != nil {
		t.Fatal(err)
	}
	kvs[0].Value[1] = 'Z'
	// Reading after more writes also checks that returned slices do not
	// alias the database's memory (bbolt's memory map).
	for i := range 50 {
		if err := db.Put(storage.BucketClusters, fmt.Sprintf("k%03d", i), bytes.Repeat([]byte{'x'}, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	MustGet(t, db, storage.BucketClusters, "c", "original")
	if string(got) != "Yriginal" || string(kvs[0].Value) != "oZiginal" {
		t.Errorf("returned values changed under the caller: %q, %q", got, kvs[0].Value)
	}
}

func testListSorted(t *testing.T, db storage.Store) {
	empty, err := db.List(storage.BucketOperations)
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("List of an empty bucket = %#v, %v; want an empty non-nil slice", empty, err)
	}
	keys := []string{"b", "a", "B", "aa", "a-1", "z", "0", "c1", "a/b", "a\x00"}
	for _, k := range keys {
		if err := db.Put(storage.BucketClusters, k, []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Put(storage.BucketUsers, "other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	kvs, err := db.List(storage.BucketClusters)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		if string(kv.Value) != "v-"+kv.Key {
			t.Errorf("value of %q = %q, want %q", kv.Key, kv.Value, "v-"+kv.Key)
		}
	}
	if got, want := Keys(kvs), slices.Sorted(slices.Values(keys)); !slices.Equal(got, want) {
		t.Errorf("List keys = %q, want %q", got, want)
	}
}

func testUnknownBucket(t *testing.T, db storage.Store) {
	const nope storage.Bucket = "nope"
	_, getErr := db.Get(nope, "k")
	_, listErr := db.List(nope)
	_, prefixErr := db.ListPrefix(nope, "")
	for name, err := range map[string]error{
		"Get":          getErr,
		"List":         listErr,
		"ListPrefix":   prefixErr,
		"Put":          db.Put(nope, "k", []byte("v")),
		"Delete":       db.Delete(nope, "k"),
		"DeletePrefix": db.Update(func(tx storage.Tx) error { return tx.DeletePrefix(nope, "") }),
	} {
		if !errors.Is(err, storage.ErrUnknownBucket) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s on an unknown bucket: error = %v, want ErrUnknownBucket naming it", name, err)
		}
	}
}

// testViewIsSnapshot: once a View has read, writes committed by others are
// not seen by its later reads. (A snapshot is taken at the latest at the
// View's first read.)
func testViewIsSnapshot(t *testing.T, db storage.Store) {
	// Grow bbolt's memory map first: a writer that must remap waits for
	// open readers, which would deadlock this test's reader-waits-for-writer.
	if err := db.Put(storage.BucketOperationLogs, "big", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(storage.BucketOperationLogs, "big"); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(storage.BucketClusters, "c1", []byte("before")); err != nil {
		t.Fatal(err)
	}

	err := db.View(func(r storage.Reader) error {
		if v, err := r.Get(storage.BucketClusters, "c1"); err != nil || string(v) != "before" {
			return fmt.Errorf("first read c1 = %q, %v; want %q", v, err, "before")
		}
		written := make(chan error, 1)
		go func() {
			err := db.Put(storage.BucketClusters, "c1", []byte("after"))
			if err == nil {
				err = db.Put(storage.BucketClusters, "c2", []byte("new"))
			}
			if err == nil {
				err = db.Delete(storage.BucketClusters, "c0")
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
		v, err := r.Get(storage.BucketClusters, "c1")
		if err != nil || string(v) != "before" {
			return fmt.Errorf("snapshot read c1 = %q, %v; want %q", v, err, "before")
		}
		kvs, err := r.List(storage.BucketClusters)
		if err != nil || len(kvs) != 1 {
			return fmt.Errorf("snapshot List = %v, %v; want only c1", kvs, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	MustGet(t, db, storage.BucketClusters, "c1", "after")
	MustGet(t, db, storage.BucketClusters, "c2", "new")
}

func testConcurrentUse(t *testing.T, db storage.Store) {
	var wg sync.WaitGroup
	errs := make(chan error, 8*50)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Sprintf("g%d-%02d", g, i)
				if err := db.Put(storage.BucketClusters, key, []byte(key)); err != nil {
					errs <- err
					return
				}
				if v, err := db.Get(storage.BucketClusters, key); err != nil || string(v) != key {
					errs <- fmt.Errorf("Get %s = %q, %v", key, v, err)
					return
				}
				if _, err := db.List(storage.BucketClusters); err != nil {
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
	kvs, err := db.List(storage.BucketClusters)
	if err != nil || len(kvs) != 8*50 {
		t.Fatalf("List after concurrent puts: %d pairs, %v; want %d", len(kvs), err, 8*50)
	}
}

func testErrClosed(t *testing.T, db storage.Store) {
	if err := db.Put(storage.BucketClusters, "c1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, getErr := db.Get(storage.BucketClusters, "c1")
	_, listErr := db.List(storage.BucketClusters)
	_, prefixErr := db.ListPrefix(storage.BucketClusters, "c")
	calls := map[string]error{
		"Get":        getErr,
		"List":       listErr,
		"ListPrefix": prefixErr,
		"Put":        db.Put(storage.BucketClusters, "c1", []byte("v")),
		"Delete":     db.Delete(storage.BucketClusters, "c1"),
		"Update":     db.Update(func(storage.Tx) error { return nil }),
		"View":       db.View(func(storage.Reader) error { return nil }),
		"Close":      db.Close(),
	}
	for name, err := range calls {
		if !errors.Is(err, storage.ErrClosed) {
			t.Errorf("%s after Close: error = %v, want ErrClosed", name, err)
		}
	}
}

func testPrefixes(t *testing.T, s storage.Store) {
	for _, k := range []string{"a/1", "a/2", "ab/1", "b/1", "a"} {
		if err := s.Put(storage.BucketOperationLogs, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"a/", []string{"a/1", "a/2"}},
		{"a", []string{"a", "a/1", "a/2", "ab/1"}},
		{"c", []string{}},
		{"", []string{"a", "a/1", "a/2", "ab/1", "b/1"}},
	}
	for _, tc := range cases {
		kvs, err := s.ListPrefix(storage.BucketOperationLogs, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if kvs == nil {
			t.Errorf("ListPrefix(%q) = nil, want a non-nil slice", tc.prefix)
		}
		if got := Keys(kvs); !slices.Equal(got, tc.want) {
			t.Errorf("ListPrefix(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}
	if err := s.Update(func(tx storage.Tx) error { return tx.DeletePrefix(storage.BucketOperationLogs, "a/") }); err != nil {
		t.Fatal(err)
	}
	kvs, _ := s.List(storage.BucketOperationLogs)
	if got := Keys(kvs); !slices.Equal(got, []string{"a", "ab/1", "b/1"}) {
		t.Errorf("after DeletePrefix(a/): %v", got)
	}
}

func pairs(kvs []storage.KV) []string {
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, kv.Key+"="+string(kv.Value))
	}
	return out
}
