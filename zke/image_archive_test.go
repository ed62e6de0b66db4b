package zke

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// TestOpenImageArchive opens archives in a real image directory: files
// inside it (relative, or absolute inside it, or through a symlink that
// stays inside) open; anything leading out of it (absolute elsewhere,
// "..", a symlink out, a symlink to an absolute path) or that is not a
// regular file is refused with an error naming the field and the
// directory, without blocking.
func TestOpenImageArchive(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "images")
	secret := filepath.Join(base, "singlecloud.db.key")
	mustWrite := func(p, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(dir, "images.tar"), "archive")
	mustWrite(filepath.Join(dir, "v1.36", "coredns.tar"), "coredns")
	mustWrite(secret, "key")
	for _, l := range []struct{ target, name string }{
		{"images.tar", "alias.tar"},
		{"../singlecloud.db.key", "out.tar"},
		{secret, "abs.tar"},
		{base, "updir"},
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.tar"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, dir, archive string
		want               string // content, or "" for a refusal
		wantErr            string
	}{
		{"relative", dir, "images.tar", "archive", ""},
		{"in a subdirectory", dir, "v1.36/coredns.tar", "coredns", ""},
		{"absolute inside the directory (stored before confinement)", dir, filepath.Join(dir, "images.tar"), "archive", ""},
		{"symlink inside", dir, "alias.tar", "archive", ""},
		{"absolute outside", dir, "/etc/shadow", "", "not a file inside the image directory " + dir + ": put the archive there"},
		{"the database key by absolute path", dir, secret, "", "not a file inside the image directory " + dir},
		{"dot-dot", dir, "../../etc/shadow", "", "not a file inside the image directory"},
		{"symlink out", dir, "out.tar", "", "must not lead out"},
		{"absolute symlink", dir, "abs.tar", "", "must not lead out"},
		{"through a directory symlink out", dir, "updir/singlecloud.db.key", "", "must not lead out"},
		{"missing", dir, "nope.tar", "", "no such file"},
		{"a fifo", dir, "fifo.tar", "", "not a regular file"},
		{"a directory", dir, "v1.36", "", "not a regular file"},
		{"no image directory", "", "images.tar", "", "--image-dir"},
		{"image directory missing", filepath.Join(base, "none"), "images.tar", "", "open the image directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := openImageArchive(tt.dir, tt.archive)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("openImageArchive(%q) = %v", tt.archive, err)
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				if err != nil || string(b) != tt.want {
					t.Fatalf("read %q, %v; want %q", b, err, tt.want)
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("openImageArchive(%q) opened it", tt.archive)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "imageArchive") {
				t.Fatalf("error %q does not name imageArchive and say %q", err, tt.wantErr)
			}
			if !errors.Is(err, workflow.ErrUserFixable) {
				t.Fatalf("error %v is not user-fixable", err)
			}
			if strings.Contains(tt.wantErr, "not a file inside") && !errors.Is(err, ErrArchiveOutsideDir) {
				t.Fatalf("error %v is not ErrArchiveOutsideDir", err)
			}
		})
	}
}
