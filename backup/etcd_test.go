package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	etcdtest.StopShared()
	os.Exit(code)
}

// TestMigrateBoltEtcdBolt moves 1,000 clusters' worth of records from a
// bbolt file to etcd and back (issue 12's check): nothing is lost, and
// the secrets still open with the key file.
func TestMigrateBoltEtcdBolt(t *testing.T) {
	srcDir := t.TempDir()
	src := newBolt(t, srcDir)
	fill(t, src, 1000)
	want := dump(t, src)
	key := filepath.Join(srcDir, "singlecloud.db.key")

	mid := etcdtest.Open(t, storage.EtcdOptions{KeyFile: key})
	st, err := Migrate(context.Background(), src, Info{Kind: KindBolt, Origin: "bolt", KeyFile: key},
		EtcdTarget{Store: mid, Endpoints: "test", KeyFile: key}, t.TempDir())
	if err != nil {
		t.Fatalf("migrate to etcd: %v", err)
	}
	if st.PerBucket[storage.BucketClusters] != 1000 || st.Records != 8*1000+2 {
		t.Errorf("migrated %s, want 1000 clusters and 8002 keys", st)
	}
	assertSameData(t, want, dump(t, mid))

	backPath := filepath.Join(t.TempDir(), "back.db")
	copyFile(t, key, backPath+".key")
	if _, err := Migrate(context.Background(), mid, Info{Kind: KindEtcd, Origin: "etcd", KeyFile: key},
		BoltTarget{Path: backPath}, t.TempDir()); err != nil {
		t.Fatalf("migrate back to bolt: %v", err)
	}
	back, err := storage.OpenBolt(backPath, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	assertSameData(t, want, dump(t, back))
	v, err := back.Get(storage.BucketClusters, "cluster-0999")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 {
		t.Error("cluster-0999 is empty")
	}
}

func TestEtcdRestoreRefuses(t *testing.T) {
	srcDir := t.TempDir()
	src := newBolt(t, srcDir)
	fill(t, src, 3)
	key := filepath.Join(srcDir, "singlecloud.db.key")
	a, err := openFile(t, writeBackup(t, src, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		key     string
		prepare func(t *testing.T, db *storage.Etcd)
		wantErr error
	}{
		{name: "wrong key file", key: filepath.Join(t.TempDir(), "other.key"), wantErr: ErrWrongKey},
		{name: "non-empty prefix", key: key, wantErr: ErrNotEmpty, prepare: func(t *testing.T, db *storage.Etcd) {
			if err := db.Put(storage.BucketUsers, "ann", []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := etcdtest.Open(t, storage.EtcdOptions{KeyFile: tt.key})
			if tt.prepare != nil {
				tt.prepare(t, db)
			}
			before := dump(t, db)
			_, err := EtcdTarget{Store: db, Endpoints: "test", KeyFile: tt.key}.Restore(context.Background(), a)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			assertSameData(t, before, dump(t, db))
		})
	}
}

// countdown is a context whose Err reports Canceled after n calls: a
// restore cancelled after its first batches.
type countdown struct {
	context.Context
	n atomic.Int32
}

func (c *countdown) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestEtcdInterruptedRestore cancels a restore half way: no singlecloud
// opens the prefix then, and a restore with --force replaces it.
func TestEtcdInterruptedRestore(t *testing.T) {
	srcDir := t.TempDir()
	src := newBolt(t, srcDir)
	fill(t, src, 100)
	want := dump(t, src)
	key := filepath.Join(srcDir, "singlecloud.db.key")
	a, err := openFile(t, writeBackup(t, src, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	prefix := etcdtest.UniquePrefix(t)
	db := etcdtest.Open(t, storage.EtcdOptions{KeyFile: key, Prefix: prefix})
	ctx := &countdown{Context: context.Background()}
	ctx.n.Store(3)
	if _, err := (EtcdTarget{Store: db, Endpoints: "test", KeyFile: key}).Restore(ctx, a); !errors.Is(err, context.Canceled) {
		t.Fatalf("restore: %v, want it cancelled", err)
	}
	db.Close()

	endpoint := etcdtest.Shared(t).Endpoint
	opts := storage.EtcdOptions{Endpoints: []string{endpoint}, Prefix: prefix, KeyFile: key}
	if s, err := storage.OpenEtcd(context.Background(), opts); !errors.Is(err, storage.ErrSchemaVersion) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("a singlecloud opened the half-restored prefix: %v", err)
	}
	opts.AllowIncomplete = true
	again, err := storage.OpenEtcd(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, err := (EtcdTarget{Store: again, Endpoints: "test", KeyFile: key}).Restore(context.Background(), a); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("restore without --force over a half restore: %v, want ErrNotEmpty", err)
	}
	if _, err := (EtcdTarget{Store: again, Endpoints: "test", KeyFile: key, Force: true}).Restore(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	assertSameData(t, want, dump(t, again))
	opts.AllowIncomplete = false
	served, err := storage.OpenEtcd(context.Background(), opts)
	if err != nil {
		t.Fatalf("open the restored prefix: %v", err)
	}
	served.Close()
}

// TestEtcdBackupConsistent backs an etcd prefix up while writers change
// it (see TestOnlineBackupConsistent).
func TestEtcdBackupConsistent(t *testing.T) {
	runConsistencyRounds(t, etcdtest.Open(t, storage.EtcdOptions{}), 3)
}
