package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCreateFileNeverReplaces: the first CreateFile of a name wins, with
// its mode, and leaves no temporary file; a second fails with fs.ErrExist
// and changes nothing.
func TestCreateFileNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	if err := CreateFile(dir, ".owner", []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(dir, ".owner", []byte("second"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second CreateFile = %v, want fs.ErrExist", err)
	}
	path := filepath.Join(dir, ".owner")
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("file: %v, %v; want mode 0600", info, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Errorf("contents %q, want the first write's", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v, want only the file", entries)
	}
}
