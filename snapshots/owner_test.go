package snapshots

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

// TestADirectoryBelongsToOneInstallation: the replicas of an installation
// (one key) share a directory; another installation is refused before it
// cleans anything, and the directory stays as it was.
func TestADirectoryBelongsToOneInstallation(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	kept := mustSave(t, s, "lab", false, src.Data)
	leftover := filepath.Join(dir, ".scratch", "save-1.db") // another process's save in progress
	if err := os.WriteFile(leftover, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir, s.sealer, testClock())
	if err != nil {
		t.Fatalf("the same installation reopening its directory: %v", err)
	}
	if _, err := again.Get("lab", kept.ID); err != nil {
		t.Errorf("reopened: %v", err)
	}
	if err := os.WriteFile(leftover, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := storage.LoadOrCreateKey(filepath.Join(t.TempDir(), "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, other, testClock()); !errors.Is(err, ErrForeignDir) {
		t.Fatalf("another installation's key: %v, want ErrForeignDir", err)
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Errorf("the refused open cleaned the owner's scratch: %v", err)
	}
	if _, err := s.Get("lab", kept.ID); err != nil {
		t.Errorf("the owner's snapshot after the refused open: %v", err)
	}

	// A directory of an earlier release has no owner file: its snapshots
	// say whose it is, whichever installation opens it first.
	if err := os.Remove(filepath.Join(dir, ownerFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, other, testClock()); !errors.Is(err, ErrForeignDir) {
		t.Fatalf("another installation first on an unmarked directory: %v, want ErrForeignDir", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ownerFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused installation marked the directory: %v", err)
	}
	if _, err := Open(dir, s.sealer, testClock()); err != nil {
		t.Fatalf("the owner on its unmarked directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ownerFile)); err != nil {
		t.Errorf("the owner did not mark its directory: %v", err)
	}
}
