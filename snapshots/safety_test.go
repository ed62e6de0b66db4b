package snapshots

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

// writeFiles writes each name (relative to dir) with its contents,
// creating directories as needed.
func writeFiles(t *testing.T, dir string, files map[string]string) {
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

// checkFiles fails t unless each name still holds its contents.
func checkFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != data {
			t.Errorf("%s after the store's work: %q, %v; want it untouched", name, got, err)
		}
	}
}

func newKey(t *testing.T) storage.Sealer {
	t.Helper()
	sealer, err := storage.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	return sealer
}

// TestOpenNeverAdoptsAUsersDirectory: a first start given a directory that
// holds other files (a user's photos beside the database, the Go package
// snapshots/ of a source tree, a backup volume) refuses it, naming the
// directory and the option, and writes or removes nothing there.
func TestOpenNeverAdoptsAUsersDirectory(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"photos named like a cluster", map[string]string{"family-photos/img001.txt": "a photo"}},
		{"a source tree's package", map[string]string{"snapshottest/take.go": "package snapshottest", "store.go": "package snapshots"}},
		{"a file at the top", map[string]string{"notes.txt": "notes"}},
		{"a snapshot-like name that is not one", map[string]string{"lab/20260101-000000-abcd.snap": "not sealed"}},
		{"a scratch-like directory beside other files", map[string]string{".scratch/save-1.db": "x", "home/me.txt": "me"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "snapshots")
			writeFiles(t, dir, tt.files)
			before := listTree(t, dir)
			_, err := Open(dir, newKey(t), nil)
			switch {
			case strings.Contains(tt.name, "snapshot-like"):
				// A sealed-looking file that does not open: another
				// installation's, or nobody's.
				if !errors.Is(err, ErrForeignDir) {
					t.Fatalf("Open = %v, want ErrForeignDir", err)
				}
			case !errors.Is(err, ErrNotOwned):
				t.Fatalf("Open = %v, want ErrNotOwned", err)
			default:
				for _, want := range []string{dir, "--snapshot-dir", "new or empty directory"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
			}
			if after := listTree(t, dir); !slices.Equal(after, before) {
				t.Errorf("the refused open changed the directory: %v, was %v", after, before)
			}
			checkFiles(t, dir, tt.files)
		})
	}
}

// TestOpenKeepsWhatItCannotProve: files a user put among the store's own
// after it claimed the directory survive every start, and Kept names them.
func TestOpenKeepsWhatItCannotProve(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	m := mustSave(t, s, "lab", false, src.Data)
	foreign := map[string]string{
		"family-photos/img001.txt":      "a photo",
		"lab/notes.txt":                 "my notes",
		"lab/20260101-000000-abcd.snap": "not sealed, no record",
		".scratch/keep.txt":             "mine",
		".scratch/drill-9/data/db":      "a drill directory without a mark",
		"photos.tar":                    "an archive",
	}
	writeFiles(t, dir, foreign)
	again, err := Open(dir, s.sealer, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, foreign)
	want := []string{".scratch/drill-9", ".scratch/keep.txt", "lab/20260101-000000-abcd.snap", "lab/notes.txt"}
	if got := again.Kept(); !slices.Equal(got, want) {
		t.Errorf("Kept() = %v, want %v", got, want)
	}
	if _, err := again.Get("lab", m.ID); err != nil {
		t.Errorf("the store's snapshot after the open: %v", err)
	}
	if got, err := again.Clusters(); err != nil || !slices.Equal(got, []string{"lab"}) {
		t.Errorf("Clusters() = %v, %v; want [lab]: family-photos holds nothing of the store's", got, err)
	}
}

// TestDeleteClusterBesideForeignFiles: deleting a cluster's snapshots
// removes the store's files only; the directory stays while it holds
// anything else, and the error says what was kept.
func TestDeleteClusterBesideForeignFiles(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	a := mustSave(t, s, "lab", false, src.Data)
	b := mustSave(t, s, "lab", true, src.Data)
	foreign := map[string]string{"lab/notes.txt": "my notes", "lab/20260101-000000-abcd.snap": "not sealed"}
	writeFiles(t, dir, foreign)

	err := s.DeleteCluster("lab")
	var kept *KeptError
	if !errors.Is(err, ErrKept) || !errors.As(err, &kept) {
		t.Fatalf("DeleteCluster = %v, want a KeptError", err)
	}
	if !slices.Equal(kept.Files, []string{"20260101-000000-abcd.snap", "notes.txt"}) {
		t.Errorf("kept %v", kept.Files)
	}
	checkFiles(t, dir, foreign)
	for _, m := range []Meta{a, b} {
		for _, ext := range []string{snapExt, metaExt} {
			if _, err := os.Stat(filepath.Join(dir, "lab", m.ID+ext)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s%s after the delete: %v, want it gone", m.ID, ext, err)
			}
		}
	}
	if list, err := s.List("lab"); err != nil || len(list) != 0 {
		t.Errorf("List after the delete = %v, %v", list, err)
	}

	// Without foreign files, the directory goes too; a user's directory
	// named like a cluster is never touched.
	mustSave(t, s, "prod", false, src.Data)
	writeFiles(t, dir, map[string]string{"photos/img.txt": "a photo"})
	if err := s.DeleteCluster("prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "prod")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("prod's directory after the delete: %v, want it gone", err)
	}
	if err := s.DeleteCluster("photos"); err != nil {
		t.Fatal(err)
	}
	checkFiles(t, dir, map[string]string{"photos/img.txt": "a photo"})
}

// TestDeleteClusterLeavesAnotherKeysSnapshot: a sealed snapshot that does
// not open with the store's key is not the store's to delete.
func TestDeleteClusterLeavesAnotherKeysSnapshot(t *testing.T) {
	src := snapshot100(t)
	other, _ := newTestStore(t, testClock())
	theirs := mustSave(t, other, "lab", false, src.Data)
	s, dir := newTestStore(t, testClock())
	mine := mustSave(t, s, "lab", false, src.Data)
	data, err := os.ReadFile(other.snapPath("lab", theirs.ID))
	if err != nil {
		t.Fatal(err)
	}
	// Under another id than the store's own snapshot, so both exist.
	theirPath := filepath.Join(dir, "lab", "20200101-000000-0000"+snapExt)
	if err := os.WriteFile(theirPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCluster("lab"); !errors.Is(err, ErrKept) {
		t.Fatalf("DeleteCluster = %v, want ErrKept", err)
	}
	if _, err := os.Stat(theirPath); err != nil {
		t.Errorf("another key's file after the delete: %v", err)
	}
	if _, err := os.Stat(s.snapPath("lab", mine.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the store's own snapshot after the delete: %v", err)
	}
}
