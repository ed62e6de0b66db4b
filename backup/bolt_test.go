package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

func TestBoltRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 60} {
		t.Run(fmt.Sprintf("%d clusters", n), func(t *testing.T) {
			srcDir := t.TempDir()
			src := newBolt(t, srcDir)
			fill(t, src, n)
			want := dump(t, src)
			a, err := openFile(t, writeBackup(t, src, t.TempDir()))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			dir := t.TempDir()
			target := BoltTarget{Path: filepath.Join(dir, "restored.db")}
			copyFile(t, filepath.Join(srcDir, "singlecloud.db.key"), target.Path+".key")
			st, err := target.Restore(context.Background(), a)
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if got := st.PerBucket[storage.BucketClusters]; got != n {
				t.Errorf("restored %d clusters, want %d (%s)", got, n, st)
			}
			db, err := storage.OpenBolt(target.Path, storage.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			assertSameData(t, want, dump(t, db))
			if n > 0 {
				// The secrets open with the key file, in their new database.
				v, err := db.Get(storage.BucketHosts, "host-cluster-0000")
				if err != nil {
					t.Fatal(err)
				}
				if p, err := db.Sealer().Open(v, storage.AAD(storage.BucketHosts, "host-cluster-0000")); err != nil || string(p) != secretPlaintext {
					t.Errorf("restored secret does not open: %v", err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".restored.db.restore-*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// TestBackupHoldsSealedSecretsOnly greps a backup for a secret's plaintext
// and for the key file's bytes: neither may be in it.
func TestBackupHoldsSealedSecretsOnly(t *testing.T) {
	dir := t.TempDir()
	src := newBolt(t, dir)
	fill(t, src, 5)
	b, err := os.ReadFile(writeBackup(t, src, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, "singlecloud.db.key"))
	if err != nil {
		t.Fatal(err)
	}
	for name, needle := range map[string][]byte{
		"secret plaintext":         []byte(secretPlaintext),
		"part of secret plaintext": []byte("super-secret"),
		"key file bytes":           key,
	} {
		if bytes.Contains(b, needle) {
			t.Errorf("the backup holds the %s", name)
		}
	}
	if !bytes.Contains(b, []byte("cluster-0004")) {
		t.Error("the backup lacks a cluster's name: the test greps the wrong bytes")
	}
}

// TestOnlineBackupConsistent backs a database up while writers change it:
// each write adds a cluster and its user and bumps a counter in one
// transaction, so a consistent backup has as many of each as the counter.
func TestOnlineBackupConsistent(t *testing.T) {
	runConsistencyRounds(t, newBolt(t, t.TempDir()), 5)
}

// runConsistencyRounds backs src up rounds times while 3 writers change
// it, and checks each backup is one snapshot.
func runConsistencyRounds(t *testing.T, src sealedStore, rounds int) {
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg        sync.WaitGroup
		committed atomic.Int64
	)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("w%d-%06d", w, i)
				err := src.Update(func(tx storage.Tx) error {
					n := 0
					if v, err := tx.Get(storage.BucketSettings, "counter"); err == nil {
						n, _ = strconv.Atoi(string(v))
					}
					if err := tx.Put(storage.BucketClusters, name, []byte("{}")); err != nil {
						return err
					}
					if err := tx.Put(storage.BucketUsers, name, []byte("{}")); err != nil {
						return err
					}
					return tx.Put(storage.BucketSettings, "counter", []byte(strconv.Itoa(n+1)))
				})
				if err != nil {
					t.Errorf("writer: %v", err)
					return
				}
				committed.Add(1)
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	for round := range rounds {
		waitFor(t, func() bool { return committed.Load() >= int64(20*(round+1)) })
		var buf bytes.Buffer
		if _, err := Write(&buf, src, Info{Kind: KindBolt, Origin: "test"}); err != nil {
			t.Fatal(err)
		}
		a, err := Open(&buf, t.TempDir())
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		counts := map[storage.Bucket]int{}
		counter := 0
		err = a.Each(func(r Record) error {
			counts[r.Bucket]++
			if r.Bucket == storage.BucketSettings && r.Key == "counter" {
				counter, _ = strconv.Atoi(string(r.Value))
			}
			return nil
		})
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
		if counts[storage.BucketClusters] != counter || counts[storage.BucketUsers] != counter {
			t.Errorf("round %d: %d clusters and %d users in the backup, its counter says %d: not one snapshot",
				round, counts[storage.BucketClusters], counts[storage.BucketUsers], counter)
		}
		t.Logf("round %d: %d clusters", round, counter)
	}
}

// waitFor waits up to 30 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatal("timed out waiting")
		case <-tick.C:
		}
	}
}

func TestBoltRestoreRefuses(t *testing.T) {
	srcDir := t.TempDir()
	src := newBolt(t, srcDir)
	fill(t, src, 3)
	srcKey := filepath.Join(srcDir, "singlecloud.db.key")
	good := writeBackup(t, src, t.TempDir())
	goodBytes, _ := os.ReadFile(good)

	tests := []struct {
		name string
		// backup returns the backup's bytes.
		backup func() []byte
		// setup prepares the target directory: the key file, an
		// existing database; it returns a cleanup.
		setup   func(t *testing.T, target string) func()
		force   bool
		wantErr error
		// wantText must be in the error.
		wantText string
	}{
		{name: "flipped byte in a value", wantErr: ErrCorrupt, wantText: "checksum",
			backup: func() []byte {
				b := bytes.Clone(goodBytes)
				b[bytes.Index(b, []byte("step connect ok"))] ^= 1
				return b
			}},
		{name: "flipped byte in a key", wantErr: ErrCorrupt,
			backup: func() []byte {
				b := bytes.Clone(goodBytes)
				b[bytes.Index(b, []byte("cluster-0001"))+8] = '9'
				return b
			}},
		{name: "truncated", wantErr: ErrCorrupt, wantText: "truncated",
			backup: func() []byte { return goodBytes[:len(goodBytes)-40] }},
		{name: "not a backup", wantErr: ErrCorrupt, backup: func() []byte { return []byte("hello\n") }},
		{name: "wrong key file", wantErr: ErrWrongKey, wantText: "test.key",
			setup: func(t *testing.T, target string) func() {
				if _, err := storage.LoadOrCreateKey(target + ".key"); err != nil { // a new, other key
					t.Fatal(err)
				}
				return func() {}
			}},
		{name: "missing key file", wantText: "does not exist",
			setup: func(*testing.T, string) func() { return func() {} }},
		{name: "non-empty target", wantErr: ErrNotEmpty, wantText: "--force",
			setup: func(t *testing.T, target string) func() {
				db := existing(t, target, srcKey)
				db.Close()
				return func() {}
			}},
		{name: "target held by a server", wantErr: ErrInUse, force: true,
			setup: func(t *testing.T, target string) func() {
				db := existing(t, target, srcKey)
				return func() { db.Close() }
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "target.db")
			cleanup := func() {}
			if tt.setup != nil {
				cleanup = tt.setup(t, target)
			} else {
				copyFile(t, srcKey, target+".key")
			}
			_, statErr := os.Stat(target)
			existed := statErr == nil
			b := goodBytes
			if tt.backup != nil {
				b = tt.backup()
			}
			a, err := Open(bytes.NewReader(b), t.TempDir())
			if err == nil {
				defer a.Close()
				_, err = BoltTarget{Path: target, Force: tt.force}.Restore(context.Background(), a)
			}
			if err == nil {
				t.Fatal("restore succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(tt.wantText)) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
			cleanup()
			assertUntouched(t, target, existed)
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(target), ".target.db.restore-*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

// assertUntouched checks that target is still absent, or still holds
// only what existing put there.
func assertUntouched(t *testing.T, target string, existed bool) {
	t.Helper()
	if !existed {
		if _, err := os.Stat(target); err == nil {
			t.Error("the target was created")
		}
		return
	}
	db, err := storage.OpenBolt(target, storage.BoltOptions{})
	if err != nil {
		t.Fatalf("the target does not open any more: %v", err)
	}
	defer db.Close()
	kvs, err := db.List(storage.BucketClusters)
	if err != nil || len(kvs) != 1 || kvs[0].Key != "other" {
		t.Errorf("the target's clusters were changed: %v %v", kvs, err)
	}
}

// existing creates a database holding a cluster at path, sealed with key.
func existing(t *testing.T, path, key string) *storage.Bolt {
	t.Helper()
	copyFile(t, key, path+".key")
	db, err := storage.OpenBolt(path, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put(storage.BucketClusters, "other", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestBoltRestoreForce replaces an existing installation with --force.
func TestBoltRestoreForce(t *testing.T) {
	srcDir := t.TempDir()
	src := newBolt(t, srcDir)
	fill(t, src, 2)
	want := dump(t, src)
	a, err := openFile(t, writeBackup(t, src, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "target.db")
	existing(t, target, filepath.Join(srcDir, "singlecloud.db.key")).Close()
	if _, err := (BoltTarget{Path: target, Force: true}).Restore(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	db, err := storage.OpenBolt(target, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	assertSameData(t, want, dump(t, db))
}
