package e2e

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sourceTree is what a start in a checkout of this repository finds around
// it: Go packages named snapshots/ and images/ (once the default snapshot
// and image directories), and a user's files.
var sourceTree = map[string]string{
	"snapshots/snapshottest/take.go": "package snapshottest\n",
	"snapshots/store.go":             "package snapshots\n",
	"images/README":                  "images of the docs\n",
	"family-photos/img001.txt":       "a photo\n",
	"go.mod":                         "module example\n",
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// treeOf lists every path under dir, relative, sorted.
func treeOf(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func checkTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != data {
			t.Errorf("%s after the start: %q, %v; want it untouched", name, got, err)
		}
	}
}

// TestFirstStartInASourceTreeChangesNothingThere: the README's run command
// in a checkout. The server keeps every file in ./singlecloud-data, says
// so in its first log line, and leaves the directory's own files (among
// them packages named snapshots/ and images/) as they were.
func TestFirstStartInASourceTreeChangesNothingThere(t *testing.T) {
	work := t.TempDir()
	writeTree(t, work, sourceTree)
	before := treeOf(t, work)
	data := filepath.Join(work, "singlecloud-data")
	inst := startIn(t, work, filepath.Join(data, "singlecloud.admin-password"))
	inst.admin(t) // the generated password logs in
	inst.stop(syscall.SIGTERM)
	if t.Failed() {
		t.Logf("log:\n%s", inst.logText())
	}

	checkTree(t, work, sourceTree)
	var added []string
	for _, p := range treeOf(t, work) {
		if !slices.Contains(before, p) && !strings.HasPrefix(p, "singlecloud-data"+string(filepath.Separator)) {
			added = append(added, p)
		}
	}
	if !slices.Equal(added, []string{"singlecloud-data"}) {
		t.Errorf("the start added %v beside the checkout's files, want only singlecloud-data", added)
	}
	for _, f := range []string{"singlecloud.db", "singlecloud.db.key", "singlecloud.admin-password", "snapshots"} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("%s is not in the data directory: %v", f, err)
		}
	}
	if info, err := os.Stat(data); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v, %v; want mode 0700", info, err)
	}
	first, _, _ := strings.Cut(inst.logText(), "\n")
	if !strings.Contains(first, data) {
		t.Errorf("the first log line does not say where the files are (%s): %s", data, first)
	}
}

// startIn starts singlecloud with its working directory work and args but
// no --db (it finds its files by its defaults), reading the generated admin
// password from passwordFile; it is stopped at the end of the test.
func startIn(t *testing.T, work, passwordFile string, args ...string) *instance {
	t.Helper()
	inst := &instance{t: t, dir: work, addr: freePort(t), workDir: work, args: args, passwordFile: passwordFile}
	inst.URL = "http://" + inst.addr
	inst.start()
	t.Cleanup(func() { inst.stop(syscall.SIGTERM) })
	return inst
}

// runToExit runs singlecloud with args in dir and returns its exit code
// and output once it exits; it fails t if it is still running after 30s.
func runToExit(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"--listen", freePort(t)}, args...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("singlecloud %v did not exit within 30s:\n%s", args, out.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run singlecloud: %v", err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// TestStartBesideForeignSnapshotDirectories: a snapshot directory that
// holds files singlecloud did not write (a data directory's snapshots/
// made by someone else, --snapshot-dir pointed at a backup volume) is
// refused at start with an error naming it and the flag, and nothing in
// it changes.
func TestStartBesideForeignSnapshotDirectories(t *testing.T) {
	work := t.TempDir()
	foreign := map[string]string{
		"data/snapshots/family-photos/img001.txt": "a photo\n",
		"backups/lab/notes.txt":                   "notes\n",
		"backups/etc.tar":                         "an archive\n",
	}
	writeTree(t, work, foreign)
	for _, tt := range []struct {
		name string
		args []string
		dir  string
	}{
		{"a data directory's snapshots/", []string{"--data-dir", filepath.Join(work, "data")}, filepath.Join(work, "data", "snapshots")},
		{"--snapshot-dir on a backup volume", []string{"--db", filepath.Join(work, "own", "singlecloud.db"),
			"--snapshot-dir", filepath.Join(work, "backups")}, filepath.Join(work, "backups")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.args[0] == "--db" {
				if err := os.MkdirAll(filepath.Join(work, "own"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			before := treeOf(t, tt.dir)
			code, out := runToExit(t, work, tt.args...)
			if code == 0 {
				t.Fatalf("the start succeeded beside a foreign snapshot directory:\n%s", out)
			}
			for _, want := range []string{tt.dir, "--snapshot-dir", "not empty"} {
				if !strings.Contains(out, want) {
					t.Errorf("the error does not name %q:\n%s", want, out)
				}
			}
			if after := treeOf(t, tt.dir); !slices.Equal(after, before) {
				t.Errorf("the refused start changed %s: %v, was %v", tt.dir, after, before)
			}
		})
	}
	checkTree(t, work, foreign)
}

// TestAnEarlierReleasesDefaultKeepsWorking: a server started where an
// earlier release kept ./singlecloud.db (its default) keeps using it, its
// key and its admin password file, and says how to move them.
func TestAnEarlierReleasesDefaultKeepsWorking(t *testing.T) {
	work := t.TempDir()
	// An earlier release's start: its files in the working directory.
	old := startInstance(t, work)
	old.stop(syscall.SIGTERM)

	inst := startIn(t, work, filepath.Join(work, "singlecloud.admin-password"))
	if inst.password != old.password {
		t.Fatalf("the admin password file changed")
	}
	inst.admin(t)
	if _, err := os.Stat(filepath.Join(work, "singlecloud-data")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a data directory was made beside the earlier release's database: %v", err)
	}
	if !strings.Contains(inst.logText(), "earlier release") {
		t.Errorf("the log does not say the earlier default is used:\n%s", inst.logText())
	}
}

// TestStartBesideForeignFilesInTheDataDirectory: a data directory and an
// image directory that already hold other files keep them through a
// first start, a restart and a crash (kill -9) and restart.
func TestStartBesideForeignFilesInTheDataDirectory(t *testing.T) {
	work := t.TempDir()
	foreign := map[string]string{
		"data/notes.txt":          "notes\n",
		"data/images/v1/keep.tar": "an archive\n",
		"data/backups/old.backup": "a backup\n",
	}
	writeTree(t, work, foreign)
	data := filepath.Join(work, "data")
	inst := startIn(t, work, filepath.Join(data, "singlecloud.admin-password"), "--data-dir", data)
	inst.admin(t)
	inst.restart(syscall.SIGTERM)
	inst.restart(syscall.SIGKILL)
	inst.admin(t)
	checkTree(t, work, foreign)
}
