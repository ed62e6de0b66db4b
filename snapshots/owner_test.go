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
}
