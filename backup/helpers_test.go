package backup

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

// secretPlaintext is sealed into every row fill writes: it must never
// appear in a backup.
const secretPlaintext = "-----BEGIN TEST PRIVATE KEY----- super-secret-ssh-key"

// sealedStore is a Store with its Sealer (Bolt, Etcd).
type sealedStore interface {
	storage.Store
	Sealer() storage.Sealer
}

// fill writes n clusters' worth of records: a cluster row with a sealed
// secret, two operations, log lines, a host with a sealed key, a user and
// an application, plus the sealed JWT secret in settings.
func fill(t testing.TB, db sealedStore, n int) {
	t.Helper()
	s := db.Sealer()
	seal := func(b storage.Bucket, key string) []byte {
		v, err := s.Seal([]byte(secretPlaintext), storage.AAD(b, key))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i := 0; i < n; i += 20 {
		err := db.Update(func(tx storage.Tx) error {
			for j := i; j < min(i+20, n); j++ {
				name := fmt.Sprintf("cluster-%04d", j)
				rec, _ := json.Marshal(map[string]any{"name": name, "sealed": seal(storage.BucketClusters, name), "nodes": j % 7})
				puts := []struct {
					b storage.Bucket
					k string
					v []byte
				}{
					{storage.BucketClusters, name, rec},
					{storage.BucketOperations, name + "/2024-01-01T00:00:00Z", []byte(`{"kind":"create"}`)},
					{storage.BucketOperations, name + "/2024-02-01T00:00:00Z", []byte(`{"kind":"update"}`)},
					{storage.BucketOperationLogs, name + "/0001", []byte("step connect ok")},
					{storage.BucketHosts, "host-" + name, seal(storage.BucketHosts, "host-"+name)},
					{storage.BucketUsers, "user-" + name, []byte(`{"name":"u"}`)},
					{storage.BucketApplications, name + "/web", []byte(`{"phase":"Running"}`)},
					{storage.BucketApplicationLogs, name + "/web/1", []byte{}},
				}
				for _, p := range puts {
					if err := tx.Put(p.b, p.k, p.v); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("fill: %v", err)
		}
	}
	if err := db.Put(storage.BucketSettings, "jwtSecret", seal(storage.BucketSettings, "jwtSecret")); err != nil {
		t.Fatal(err)
	}
}

// dump reads every bucket of db.
func dump(t testing.TB, db storage.Store) map[storage.Bucket][]storage.KV {
	t.Helper()
	out := map[storage.Bucket][]storage.KV{}
	for _, b := range storage.Buckets() {
		kvs, err := db.List(b)
		if err != nil {
			t.Fatalf("dump %s: %v", b, err)
		}
		out[b] = kvs
	}
	return out
}

func assertSameData(t testing.TB, want, got map[storage.Bucket][]storage.KV) {
	t.Helper()
	for _, b := range storage.Buckets() {
		if len(want[b]) != len(got[b]) {
			t.Errorf("bucket %s: %d keys, want %d", b, len(got[b]), len(want[b]))
			continue
		}
		if !reflect.DeepEqual(want[b], got[b]) {
			t.Errorf("bucket %s differs", b)
		}
	}
}

// newBolt opens a new bbolt database in dir.
func newBolt(t testing.TB, dir string) *storage.Bolt {
	t.Helper()
	db, err := storage.OpenBolt(filepath.Join(dir, "singlecloud.db"), storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// copyFile copies a key file (mode 0600).
func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeBackup backs db up into a file of dir and returns its path.
func writeBackup(t testing.TB, db Source, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "backup.scb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Write(f, db, Info{Kind: KindBolt, Origin: "test", KeyFile: "test.key"}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return path
}

// openFile opens the backup at path as an Archive.
func openFile(t testing.TB, path string) (*Archive, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := Open(io.Reader(f), t.TempDir())
	if err == nil {
		t.Cleanup(func() { a.Close() })
	}
	return a, err
}
