package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/backup"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

func TestIsStoreCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"backup"}, true},
		{[]string{"backup", "--db", "x.db", "-o", "f"}, true},
		{[]string{"backup", "--store", "etcd"}, true},
		{[]string{"backup", "--context", "prod", "-o", "f"}, false},
		{[]string{"backup", "--server=http://x:8080"}, false},
		{[]string{"backup", "-context", "prod"}, false},
		{[]string{"restore", "--db", "x"}, true},
		{[]string{"migrate", "--from", "bolt:x"}, true},
		{[]string{"cluster", "list"}, false},
		{[]string{"--db", "x"}, false},
	} {
		if got := isStoreCommand(tt.args); got != tt.want {
			t.Errorf("isStoreCommand(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// runCmd runs a store command and returns its exit code, stdout, stderr.
func runCmd(t *testing.T, stdin []byte, args ...string) (int, []byte, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runStoreCommand(context.Background(), args, cmdStreams{in: bytes.NewReader(stdin), out: &out, err: &errb,
		getenv: func(string) string { return "" }})
	return code, out.Bytes(), errb.String()
}

// startBoltRun starts run() on the database db and waits for /readyz.
func startBoltRun(t *testing.T, db string) *etcdServer {
	t.Helper()
	listen := freeAddr(t)
	cfg, err := parseConfig([]string{"--listen", listen, "--db", db, "--admin-password", "etcd-test-pw", "--log-level", "error"},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return startRun(t, cfg, listen)
}

// TestBackupOfARunningServer: the file is locked, so the offline backup
// says to go through the API; GET /backup (admin only) gives a backup,
// which restores, after the server stopped, into a new database that
// holds the user created through the API.
func TestBackupOfARunningServer(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "singlecloud.db")
	s := startBoltRun(t, db)
	token := s.login(t)
	if status, body := do(t, http.MethodPost, s.base+"/apis/zcloud.cn/v1/users", token,
		`{"name":"alice","password":"`+auth.PasswordDigest("alice-pw")+`"}`); status/100 != 2 {
		t.Fatalf("create user: %d %s", status, body)
	}

	code, _, stderr := runCmd(t, nil, "backup", "--db", db, "-o", filepath.Join(dir, "offline.backup"))
	if code != 1 || !strings.Contains(stderr, "in use by a running singlecloud") || !strings.Contains(stderr, "--context") {
		t.Fatalf("offline backup of a served file: exit %d, %q; want 1 and the advice to go through the API", code, stderr)
	}
	if status, _ := get(t, s.base+"/apis/zcloud.cn/v1/backup", ""); status != http.StatusUnauthorized {
		t.Errorf("GET /backup without a token: %d, want 401", status)
	}
	status, body := get(t, s.base+"/apis/zcloud.cn/v1/backup", token)
	if status != http.StatusOK {
		t.Fatalf("GET /backup: %d %s", status, body)
	}
	hdr, st, err := backup.Check(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the online backup does not check: %v", err)
	}
	if hdr.Source != backup.KindBolt || hdr.KeyFile != db+".key" || st.PerBucket[storage.BucketUsers] != 2 {
		t.Errorf("header %+v, stats %s; want bolt, key %s.key, 2 users", hdr, st, db)
	}
	key, _ := os.ReadFile(db + ".key")
	if bytes.Contains([]byte(body), key) {
		t.Error("the backup holds the key file's bytes")
	}
	s.stop(t)

	restored := filepath.Join(t.TempDir(), "restored.db")
	code, _, stderr = runCmd(t, []byte(body), "restore", "--db", restored)
	if code != 1 || !strings.Contains(stderr, restored+".key does not exist") || !strings.Contains(stderr, db+".key") {
		t.Fatalf("restore without the key file: exit %d, %q; want 1 naming the key to copy", code, stderr)
	}
	if err := os.WriteFile(restored+".key", key, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = runCmd(t, []byte(body), "restore", "--db", restored); code != 0 {
		t.Fatalf("restore: exit %d, %s", code, stderr)
	}
	again := startBoltRun(t, restored)
	if status, body := get(t, again.base+"/apis/zcloud.cn/v1/users/alice", again.login(t)); status != http.StatusOK {
		t.Fatalf("the user on the restored database: %d %s", status, body)
	}
}

// TestRestoreRefusesAServedPrefix: a restore into an etcd prefix a
// singlecloud runs on is refused, even with --force, and changes nothing.
func TestRestoreRefusesAServedPrefix(t *testing.T) {
	endpoint := etcdtest.Shared(t).Endpoint
	prefix := etcdtest.UniquePrefix(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	fillBolt(t, src, 3)
	code, b, stderr := runCmd(t, nil, "backup", "--db", src)
	if code != 0 || !strings.Contains(stderr, "NOT in it: back up "+src+".key separately") {
		t.Fatalf("backup: exit %d, %s", code, stderr)
	}
	s := startEtcdRun(t, endpoint, prefix, src+".key")
	code, _, stderr = runCmd(t, b, "restore", "--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", prefix,
		"--etcd-key-file", src+".key", "--force")
	if code != 1 || !strings.Contains(stderr, "another singlecloud runs on "+prefix) {
		t.Fatalf("restore into a served prefix: exit %d, %q", code, stderr)
	}
	if status, _ := get(t, s.base+"/apis/zcloud.cn/v1/users/user-0001", s.login(t)); status != http.StatusNotFound {
		t.Errorf("the served prefix was changed: user-0001 answers %d", status)
	}
}

// TestMigrateCommand moves a bbolt database to etcd and back with the
// command, and the result equals the original.
func TestMigrateCommand(t *testing.T) {
	endpoint := etcdtest.Shared(t).Endpoint
	prefix := etcdtest.UniquePrefix(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	want := fillBolt(t, src, 50)

	code, _, stderr := runCmd(t, nil, "migrate", "--from", "bolt:"+src, "--to", "etcd:"+endpoint+"?prefix="+prefix)
	if code != 0 || !strings.Contains(stderr, "clusters 50") || !strings.Contains(stderr, "verified: every key equal") {
		t.Fatalf("migrate to etcd: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCmd(t, nil, "migrate", "--from", "bolt:"+src, "--to", "etcd:"+endpoint+"?prefix="+prefix)
	if code != 1 || !strings.Contains(stderr, "already holds an installation") {
		t.Fatalf("migrate into the now non-empty prefix: exit %d, %s", code, stderr)
	}
	// Back to a new bbolt file: it is given a copy of the key file, as
	// the README's command expects.
	back := filepath.Join(dir, "back.db")
	code, _, stderr = runCmd(t, nil, "migrate", "--from", "etcd:"+endpoint+"?prefix="+prefix, "--from-key-file", src+".key",
		"--to", "bolt:"+back)
	if code != 0 || !strings.Contains(stderr, "copied the key file") {
		t.Fatalf("migrate back to bolt: exit %d, %s", code, stderr)
	}
	key, _ := os.ReadFile(src + ".key")
	if got, err := os.ReadFile(back + ".key"); err != nil || string(got) != string(key) {
		t.Errorf("the new database's key file is not the source's (err %v)", err)
	}
	if fi, err := os.Stat(back + ".key"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the new key file: %v, mode %v; want 0600", err, fi.Mode())
	}
	// A source prefix that holds nothing is an error, and stays empty.
	empty := etcdtest.UniquePrefix(t)
	code, _, stderr = runCmd(t, nil, "migrate", "--from", "etcd:"+endpoint+"?prefix="+empty, "--from-key-file", src+".key",
		"--to", "bolt:"+filepath.Join(dir, "none.db"))
	if code != 1 || !strings.Contains(stderr, "holds no singlecloud installation") {
		t.Errorf("migrate from an empty prefix: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCmd(t, nil, "backup", "--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", empty,
		"--etcd-key-file", src+".key", "-o", filepath.Join(dir, "none.backup"))
	if code != 1 || !strings.Contains(stderr, "holds no singlecloud installation") {
		t.Errorf("backup of an empty prefix: exit %d, %s", code, stderr)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if resp, err := cli.Get(context.Background(), empty, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("the empty prefix after a backup and a migrate: %v keys (err %v), want none", resp.Count, err)
	}
	db, err := storage.OpenBolt(back, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := dumpStore(t, db); !reflect.DeepEqual(got, want) {
		t.Error("the database migrated to etcd and back differs from the original")
	}
	if code, _, stderr = runCmd(t, nil, "migrate", "--from", "bolt:"+src); code != 2 || !strings.Contains(stderr, "to: both are required") && !strings.Contains(stderr, "from, to") {
		t.Errorf("migrate without --to: exit %d, %s; want 2", code, stderr)
	}
}

// fillBolt creates the database path holding n clusters and users, and
// returns its contents.
func fillBolt(t *testing.T, path string, n int) map[storage.Bucket][]storage.KV {
	t.Helper()
	db, err := storage.OpenBolt(path, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx storage.Tx) error {
		for i := range n {
			rec, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("c%d", i)})
			if err := tx.Put(storage.BucketClusters, fmt.Sprintf("cluster-%04d", i), rec); err != nil {
				return err
			}
			if err := tx.Put(storage.BucketUsers, fmt.Sprintf("user-%04d", i), []byte("{}")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dumpStore(t, db)
}

func dumpStore(t *testing.T, db storage.Store) map[storage.Bucket][]storage.KV {
	t.Helper()
	out := map[storage.Bucket][]storage.KV{}
	for _, b := range storage.Buckets() {
		kvs, err := db.List(b)
		if err != nil {
			t.Fatal(err)
		}
		out[b] = kvs
	}
	return out
}
