package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

func readPasswordFile(t *testing.T, path string) (string, os.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b)), info.Mode()
}

func TestEnsureAdminPasswordFile(t *testing.T) {
	dir := t.TempDir()
	cfg := config{DB: filepath.Join(dir, "singlecloud.db")}
	path := filepath.Join(dir, adminPasswordFile)
	db := storagetest.Open(t)
	var resets []string
	users, err := auth.NewUsers(db, auth.UsersOptions{HashCost: bcrypt.MinCost,
		OnPasswordReset: func(name string) { resets = append(resets, name) }})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	// A stale file open to others and a symlink's target must not matter:
	// the first start replaces the file, never writing through a link.
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := ensureAdmin(users, cfg, log); err != nil {
		t.Fatal(err)
	}
	pw, mode := readPasswordFile(t, path)
	if mode.Type() != 0 || mode.Perm() != 0o600 {
		t.Fatalf("password file mode %v, want a regular 0600 file", mode)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	if _, err := users.Authenticate(auth.AdminName, auth.PasswordDigest(pw)); err != nil {
		t.Fatalf("the file's password does not log in: %v", err)
	}
	if strings.Contains(logs.String(), pw) || !strings.Contains(logs.String(), path) {
		t.Fatalf("log %q: want the file named and the password not shown", logs.String())
	}

	// A later start leaves it alone, but makes it private again.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ensureAdmin(users, cfg, log); err != nil {
		t.Fatal(err)
	}
	if again, mode := readPasswordFile(t, path); again != pw || mode.Perm() != 0o600 {
		t.Fatalf("after restart: %q %v, want the same password, 0600", again, mode)
	}

	// --admin-password rewrites it.
	cfg.AdminPassword = "from the flag"
	if err := ensureAdmin(users, cfg, log); err != nil {
		t.Fatal(err)
	}
	if got, mode := readPasswordFile(t, path); got != "from the flag" || mode.Perm() != 0o600 {
		t.Fatalf("after --admin-password: %q %v", got, mode)
	}
	if strings.Contains(logs.String(), "from the flag") {
		t.Fatal("the flag's password is in the log")
	}
	if len(resets) != 0 {
		t.Fatalf("OnPasswordReset called for %v by ensureAdmin", resets)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}

	// A reset through the API leaves the file stale: it is removed.
	forgetAdminPassword(cfg, log)
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("stale password file still there: %v", err)
	}
	if !strings.Contains(logs.String(), "removed") {
		t.Fatalf("the removal is not logged: %s", logs.String())
	}
	forgetAdminPassword(cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) // already gone: no error

	// A file the server did not write at that path stays: a symlink to
	// another file, or a file of several lines.
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, make := range []func() error{
		func() error { return os.Symlink(other, path) },
		func() error { os.Remove(path); return os.WriteFile(path, []byte("one\ntwo\n"), 0o600) },
	} {
		if err := make(); err != nil {
			t.Fatal(err)
		}
		forgetAdminPassword(cfg, log)
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("a file singlecloud did not write was removed: %v", err)
		}
	}
	if b, err := os.ReadFile(other); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("the symlink's target after the reset: %q, %v", b, err)
	}
}

func TestKeepPrivateRefusesNonRegularFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, adminPasswordFile)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	err := keepPrivate(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("keepPrivate on a directory: %v", err)
	}
}

// Each installation's admin password file is named after its database (or,
// on etcd, its key file), so that two installations in one directory never
// overwrite each other's.
func TestAdminPasswordFileIsNamedAfterTheDatabase(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "singlecloud.admin-password"},
		{[]string{"--db", filepath.Join(dir, "prod.db")}, "prod.admin-password"},
		{[]string{"--db", filepath.Join(dir, "lab")}, "lab.admin-password"},
		{[]string{"--store", "etcd", "--etcd-endpoints", "http://a:2379", "--etcd-key-file", filepath.Join(dir, "seal.key")}, "seal.admin-password"},
		{[]string{"--store", "etcd", "--etcd-endpoints", "http://a:2379", "--etcd-key-file", filepath.Join(dir, "edge.key"),
			"--etcd-prefix", "/edge/"}, "edge.admin-password"},
	} {
		cfg, err := parseConfig(tc.args, func(string) string { return "" })
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := filepath.Base(adminPasswordPath(cfg)); got != tc.want {
			t.Errorf("%v: admin password file %s, want %s", tc.args, got, tc.want)
		}
	}
}
