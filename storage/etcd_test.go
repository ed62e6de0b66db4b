package storage_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// replicas opens n stores on one prefix with one key file, as n
// singlecloud replicas would.
func replicas(t *testing.T, n int, opts storage.EtcdOptions) []*storage.Etcd {
	t.Helper()
	opts.Prefix = etcdtest.UniquePrefix(t)
	opts.KeyFile = filepath.Join(t.TempDir(), "singlecloud.key")
	var dbs []*storage.Etcd
	for range n {
		dbs = append(dbs, etcdtest.Open(t, opts))
	}
	return dbs
}

// increment adds one to the counter under key, read-modify-write.
func increment(tx storage.Tx, key string) error {
	n := 0
	v, err := tx.Get(storage.BucketSettings, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return err
	default:
		if n, err = strconv.Atoi(string(v)); err != nil {
			return err
		}
	}
	return tx.Put(storage.BucketSettings, key, []byte(strconv.Itoa(n+1)))
}

// TestEtcdConcurrentUpdatesSerialize: 8 writers increment one counter 50
// times each, through one store (conflicts among them take turns) or
// through 8 replicas (conflicts between processes back off); no increment
// is lost and none gives up within the default UpdateTimeout, however
// often one writer loses to the others (a loaded machine makes that many
// times in a row).
func TestEtcdConcurrentUpdatesSerialize(t *testing.T) {
	for _, n := range []int{1, 8} {
		t.Run(fmt.Sprintf("replicas%d", n), func(t *testing.T) {
			dbs := replicas(t, n, storage.EtcdOptions{})
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 8 {
				wg.Go(func() {
					db := dbs[g%len(dbs)]
					for range 50 {
						if err := db.Update(func(tx storage.Tx) error { return increment(tx, "counter") }); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			storagetest.MustGet(t, dbs[0], storage.BucketSettings, "counter", "400")
		})
	}
}

// TestEtcdTxnOpsCap: a transaction of more than MaxTxnOps operations fails
// clearly and writes nothing; a DeletePrefix is one operation however many
// keys it removes.
func TestEtcdTxnOpsCap(t *testing.T) {
	db := etcdtest.Open(t, storage.EtcdOptions{})
	putN := func(n int, prefix string) error {
		return db.Update(func(tx storage.Tx) error {
			for i := range n {
				if err := tx.Put(storage.BucketOperationLogs, fmt.Sprintf("%s%04d", prefix, i), []byte("line")); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := putN(storage.DefaultEtcdMaxTxnOps+1, "big/")
	if !errors.Is(err, storage.ErrTxnTooLarge) {
		t.Fatalf("Update of %d puts = %v, want ErrTxnTooLarge", storage.DefaultEtcdMaxTxnOps+1, err)
	}
	if kvs, err := db.List(storage.BucketOperationLogs); err != nil || len(kvs) != 0 {
		t.Fatalf("after a refused transaction: %d pairs, %v; want nothing written", len(kvs), err)
	}
	for i := range 3 {
		if err := putN(storage.DefaultEtcdMaxTxnOps, fmt.Sprintf("op/%d/", i)); err != nil {
			t.Fatalf("Update of exactly MaxTxnOps puts: %v", err)
		}
	}
	if err := db.Update(func(tx storage.Tx) error { return tx.DeletePrefix(storage.BucketOperationLogs, "op/") }); err != nil {
		t.Fatalf("DeletePrefix of %d keys: %v", 3*storage.DefaultEtcdMaxTxnOps, err)
	}
	if kvs, err := db.List(storage.BucketOperationLogs); err != nil || len(kvs) != 0 {
		t.Fatalf("after DeletePrefix: %d pairs, %v", len(kvs), err)
	}
	for _, size := range []int{1800 << 10, 3 << 20} { // over etcd's limit; over the client's
		if err := db.Put(storage.BucketOperationLogs, "huge", make([]byte, size)); !errors.Is(err, storage.ErrTxnTooLarge) {
			t.Fatalf("Put of %d bytes = %v, want ErrTxnTooLarge (etcd's --max-request-bytes)", size, err)
		}
	}
	small := etcdtest.Open(t, storage.EtcdOptions{MaxTxnOps: 2})
	err = small.Update(func(tx storage.Tx) error {
		return errors.Join(tx.Put(storage.BucketUsers, "a", nil), tx.Put(storage.BucketUsers, "b", nil),
			tx.Put(storage.BucketUsers, "c", nil))
	})
	if !errors.Is(err, storage.ErrTxnTooLarge) {
		t.Fatalf("3 puts with MaxTxnOps 2 = %v, want ErrTxnTooLarge", err)
	}
}

// TestEtcdListPages: a bucket of 5,000 keys is listed whole and in order,
// over many pages.
func TestEtcdListPages(t *testing.T) {
	for _, pageSize := range []int{0, 7} {
		t.Run(fmt.Sprintf("page%d", pageSize), func(t *testing.T) {
			db := etcdtest.Open(t, storage.EtcdOptions{ListPageSize: pageSize})
			const n = 5000
			for start := 0; start < n; start += 100 {
				if err := db.Update(func(tx storage.Tx) error {
					for i := start; i < start+100; i++ {
						if err := tx.Put(storage.BucketApplicationLogs, fmt.Sprintf("env/app/%05d", i), []byte(strconv.Itoa(i))); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			kvs, err := db.List(storage.BucketApplicationLogs)
			if err != nil {
				t.Fatal(err)
			}
			if len(kvs) != n {
				t.Fatalf("List = %d pairs, want %d", len(kvs), n)
			}
			for i, kv := range kvs {
				if kv.Key != fmt.Sprintf("env/app/%05d", i) || string(kv.Value) != strconv.Itoa(i) {
					t.Fatalf("pair %d = %s=%s", i, kv.Key, kv.Value)
				}
			}
			kvs, err = db.ListPrefix(storage.BucketApplicationLogs, "env/app/049")
			if err != nil || len(kvs) != 100 {
				t.Fatalf("ListPrefix = %d pairs, %v; want 100", len(kvs), err)
			}
		})
	}
}

// TestEtcdPrefixIsolation: two installations on one etcd, one's prefix a
// string prefix of the other's, see nothing of each other.
func TestEtcdPrefixIsolation(t *testing.T) {
	base := etcdtest.UniquePrefix(t)
	a := etcdtest.Open(t, storage.EtcdOptions{Prefix: base + "a"})
	ab := etcdtest.Open(t, storage.EtcdOptions{Prefix: base + "ab/"})
	if a.Prefix() != base+"a/" {
		t.Fatalf("Prefix() = %q, want a trailing slash added", a.Prefix())
	}
	for _, s := range []*storage.Etcd{a, ab} {
		if err := s.Put(storage.BucketClusters, "c-"+s.Prefix(), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Update(func(tx storage.Tx) error { return tx.DeletePrefix(storage.BucketUsers, "") }); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*storage.Etcd{a, ab} {
		kvs, err := s.List(storage.BucketClusters)
		if err != nil {
			t.Fatal(err)
		}
		if got := storagetest.Keys(kvs); !slices.Equal(got, []string{"c-" + s.Prefix()}) {
			t.Errorf("store %s lists %v, want only its own key", s.Prefix(), got)
		}
		storagetest.MustGet(t, s, storage.BucketSettings, storage.SettingSchemaVersion, storage.SchemaVersion)
	}
}

// TestEtcdOpen: the schema version and the shared key file are checked as
// with bbolt.
func TestEtcdOpen(t *testing.T) {
	srv := etcdtest.Shared(t)
	prefix := etcdtest.UniquePrefix(t)
	keyFile := filepath.Join(t.TempDir(), "k")
	first := etcdtest.Open(t, storage.EtcdOptions{Prefix: prefix, KeyFile: keyFile})
	sealed, err := first.Sealer().Seal([]byte("secret"), storage.AAD(storage.BucketHosts, "h1"))
	if err != nil {
		t.Fatal(err)
	}

	// A replica given the same key file opens what the first sealed.
	second := etcdtest.Open(t, storage.EtcdOptions{Prefix: prefix, KeyFile: keyFile})
	if plain, err := second.Sealer().Open(sealed, storage.AAD(storage.BucketHosts, "h1")); err != nil || string(plain) != "secret" {
		t.Fatalf("second replica Open = %q, %v", plain, err)
	}
	open := func(opts storage.EtcdOptions) error {
		if opts.Endpoints == nil {
			opts.Endpoints = []string{srv.Endpoint}
		}
		db, err := storage.OpenEtcd(context.Background(), opts)
		if err == nil {
			db.Close()
		}
		return err
	}
	// Another key file, existing or not, is refused on an existing prefix.
	otherKey := filepath.Join(t.TempDir(), "other")
	if _, err := storage.LoadOrCreateKey(otherKey); err != nil {
		t.Fatal(err)
	}
	if err := open(storage.EtcdOptions{Prefix: prefix, KeyFile: otherKey}); !errors.Is(err, storage.ErrDecrypt) {
		t.Errorf("another key file: %v, want ErrDecrypt", err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if err := open(storage.EtcdOptions{Prefix: prefix, KeyFile: missing}); err == nil {
		t.Errorf("a missing key file on an existing installation was accepted")
	}
	if _, err := storage.OpenEtcd(context.Background(), storage.EtcdOptions{KeyFile: keyFile}); err == nil {
		t.Errorf("no endpoints accepted")
	}
	if err := open(storage.EtcdOptions{Prefix: prefix}); err == nil {
		t.Errorf("no key file accepted")
	}
	// MustExist opens the installation, and refuses an empty prefix
	// without writing to it.
	if err := open(storage.EtcdOptions{Prefix: prefix, KeyFile: keyFile, MustExist: true}); err != nil {
		t.Errorf("MustExist on the installation: %v", err)
	}
	empty := etcdtest.UniquePrefix(t)
	if err := open(storage.EtcdOptions{Prefix: empty, KeyFile: keyFile, MustExist: true}); !errors.Is(err, storage.ErrNoInstallation) {
		t.Errorf("MustExist on an empty prefix: %v, want ErrNoInstallation", err)
	}
	if resp, err := first.Client().Get(context.Background(), empty, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("MustExist wrote to the empty prefix: %v keys (err %v)", resp.Count, err)
	}
	// A prefix of another schema version is refused.
	if err := first.Put(storage.BucketSettings, storage.SettingSchemaVersion, []byte("99")); err != nil {
		t.Fatal(err)
	}
	if err := open(storage.EtcdOptions{Prefix: prefix, KeyFile: keyFile}); !errors.Is(err, storage.ErrSchemaVersion) {
		t.Errorf("schema version 99: %v, want ErrSchemaVersion", err)
	}
}

// TestEtcdReplicasReadTheirWrites: a write acknowledged through one replica
// is read at once through another (reads are linearizable).
func TestEtcdReplicasReadTheirWrites(t *testing.T) {
	dbs := replicas(t, 2, storage.EtcdOptions{})
	for i := range 50 {
		v := strconv.Itoa(i)
		if err := dbs[i%2].Put(storage.BucketClusters, "c", []byte(v)); err != nil {
			t.Fatal(err)
		}
		storagetest.MustGet(t, dbs[(i+1)%2], storage.BucketClusters, "c", v)
	}
}

// TestEtcdTxUnusableAfterFn: a Tx kept past its function fails.
func TestEtcdTxUnusableAfterFn(t *testing.T) {
	db := etcdtest.Open(t, storage.EtcdOptions{})
	var kept storage.Tx
	if err := db.Update(func(tx storage.Tx) error { kept = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := kept.Put(storage.BucketClusters, "late", nil); err == nil {
		t.Error("Put through a Tx after its Update returned succeeded")
	}
	if _, err := kept.Get(storage.BucketClusters, "late"); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get through a Tx after its Update returned = %v, want a misuse error", err)
	}
}

// TestEtcdTLS: a store reaches an etcd that requires client certificates
// through the TLS options, and not without them.
func TestEtcdTLS(t *testing.T) {
	srv, files := etcdtest.StartTLS(t)
	keyFile := filepath.Join(t.TempDir(), "singlecloud.key")
	opts := storage.EtcdOptions{Endpoints: []string{srv.Endpoint}, KeyFile: keyFile,
		TLS: storage.EtcdTLS{CertFile: files.CertFile, KeyFile: files.KeyFile, CAFile: files.CAFile}}
	db, err := storage.OpenEtcd(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put(storage.BucketClusters, "c1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	storagetest.MustGet(t, db, storage.BucketClusters, "c1", "v")

	noCert := opts
	noCert.TLS.CertFile, noCert.TLS.KeyFile = "", ""
	noCert.DialTimeout, noCert.RequestTimeout = time.Second, time.Second
	if db, err := storage.OpenEtcd(context.Background(), noCert); err == nil {
		db.Close()
		t.Error("an etcd requiring client certificates accepted a store without one")
	} else {
		t.Logf("without a client certificate: %v", err)
	}
	halfCert := opts
	halfCert.TLS.KeyFile = ""
	if _, err := storage.OpenEtcd(context.Background(), halfCert); err == nil {
		t.Error("a certificate without its key was accepted")
	}
}
