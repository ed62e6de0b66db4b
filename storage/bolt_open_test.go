package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

func TestBoltReopenKeepsDataAndKey(t *testing.T) {
	db, path := openTest(t)
	if err := db.Put(BucketUsers, "admin", []byte("record")); err != nil {
		t.Fatal(err)
	}
	sealed, err := db.Sealer().Seal([]byte("ssh key"), AAD(BucketClusters, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put(BucketClusters, "c1", sealed); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for _, f := range []string{path, path + ".key"} {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, info.Mode().Perm())
		}
	}

	db2, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { db2.Close() })
	mustGet(t, db2, BucketUsers, "admin", "record")
	v, err := db2.Get(BucketClusters, "c1")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := db2.Sealer().Open(v, AAD(BucketClusters, "c1"))
	if err != nil || string(plain) != "ssh key" {
		t.Fatalf("secret sealed before reopen = %q, %v", plain, err)
	}
	mustGet(t, db2, BucketSettings, SettingSchemaVersion, SchemaVersion)
}

func TestBoltCustomKeyFile(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "keys", "custom.key")
	if err := os.Mkdir(filepath.Dir(keyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "singlecloud.db")
	db, err := OpenBolt(path, BoltOptions{KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(keyFile); err != nil {
		t.Errorf("custom key file not created: %v", err)
	}
	if _, err := os.Stat(path + ".key"); err == nil {
		t.Error("default key file created although a custom one was given")
	}
}

func TestBoltSchemaMismatchRefused(t *testing.T) {
	db, path := openTest(t)
	if err := db.Put(BucketClusters, "c1", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(BucketSettings, SettingSchemaVersion, []byte("999")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	_, err := OpenBolt(path, BoltOptions{Timeout: time.Second})
	if !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("OpenBolt on schema 999: error = %v, want ErrSchemaVersion", err)
	}
	for _, want := range []string{`"999"`, `"` + SchemaVersion + `"`, path, "restore"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}

	// The refused open released the file (else this would time out) and
	// changed nothing in it.
	raw, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("file still locked after a refused open: %v", err)
	}
	defer raw.Close()
	err = raw.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte(BucketSettings)).Get([]byte(SettingSchemaVersion)); string(v) != "999" {
			return fmt.Errorf("schema version rewritten to %q", v)
		}
		if v := tx.Bucket([]byte(BucketClusters)).Get([]byte("c1")); string(v) != "v" {
			return fmt.Errorf("cluster row changed to %q", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBoltOpenErrors(t *testing.T) {
	t.Run("empty path", func(t *testing.T) {
		if _, err := OpenBolt("", BoltOptions{}); err == nil || !strings.Contains(err.Error(), "--db") {
			t.Fatalf("error = %v, want one mentioning --db", err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "nope", "singlecloud.db")
		if _, err := OpenBolt(path, BoltOptions{}); err == nil || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("error = %v, want one naming the path", err)
		}
	})
	t.Run("locked by another opener", func(t *testing.T) {
		db, path := openTest(t)
		_ = db
		start := time.Now()
		_, err := OpenBolt(path, BoltOptions{Timeout: 100 * time.Millisecond})
		if !errors.Is(err, berrors.ErrTimeout) || !strings.Contains(err.Error(), "another singlecloud") {
			t.Fatalf("error = %v, want a lock timeout that says another singlecloud may run", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("OpenBolt waited %s for the lock, want about the 100ms timeout", d)
		}
	})
	t.Run("not a database", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "singlecloud.db")
		if _, err := LoadOrCreateKey(path + ".key"); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, bytes.Repeat([]byte("not bbolt "), 2000), 0o600)
		_, err := OpenBolt(path, BoltOptions{Timeout: time.Second})
		if err == nil || !strings.Contains(err.Error(), "not a valid singlecloud database") {
			t.Fatalf("error = %v, want one saying the file is not a database", err)
		}
	})
	t.Run("existing database without its key file", func(t *testing.T) {
		db, path := openTest(t)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path + ".key"); err != nil {
			t.Fatal(err)
		}
		_, err := OpenBolt(path, BoltOptions{})
		if err == nil || !strings.Contains(err.Error(), path+".key") || !strings.Contains(err.Error(), "restore") {
			t.Fatalf("error = %v, want one naming the missing key file and saying to restore it", err)
		}
		if _, err := os.Stat(path + ".key"); err == nil {
			t.Error("a new key was created for an existing database")
		}
	})
	t.Run("bad key file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "singlecloud.db")
		writeFile(t, path+".key", bytes.Repeat([]byte{1}, KeySize), 0o644)
		_, err := OpenBolt(path, BoltOptions{})
		if err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("error = %v, want the key file permission error", err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Error("the database file was created although the key file was refused")
		}
	})
}

func TestBoltRefusesDatabaseOpenToOthers(t *testing.T) {
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620, 0o666} {
		t.Run(fmt.Sprintf("%#o", mode), func(t *testing.T) {
			db, path := openTest(t)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			_, err := OpenBolt(path, BoltOptions{Timeout: time.Second})
			if !errors.Is(err, ErrFileMode) || !strings.Contains(err.Error(), "chmod 600 "+path) {
				t.Fatalf("error = %v, want ErrFileMode saying `chmod 600 %s`", err, path)
			}
			if err := os.Chmod(path, 0o600); err != nil {
				t.Fatal(err)
			}
			db2, err := OpenBolt(path, BoltOptions{Timeout: time.Second})
			if err != nil {
				t.Fatalf("after chmod 600: %v", err)
			}
			db2.Close()
		})
	}
}

func TestBoltDropsObsoleteBuckets(t *testing.T) {
	db, path := openTest(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("checkpoints"))
		if err != nil {
			return err
		}
		return b.Put([]byte("c1"), []byte(`["connect"]`))
	})
	if cerr := raw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	db, err = OpenBolt(path, BoltOptions{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("checkpoints")) != nil {
			t.Error("the obsolete checkpoints bucket is still there")
		}
		if tx.Bucket([]byte(BucketOperations)) == nil {
			t.Error("the operations bucket was not created")
		}
		return nil
	})
}
