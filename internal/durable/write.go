package durable

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile replaces path with what fill writes, so that after a crash
// path holds the old content or the new, whole: fill writes a temporary
// file beside it (".<name>.tmp-<digits>", mode perm, created 0600 so that
// nobody reads it before), which is fsynced, renamed over path, and the
// directory fsynced. When fill or any step fails, path is untouched and
// the temporary file removed; fill's error is returned as it is, so that
// callers can tell it with errors.Is and errors.As.
func WriteFile(path string, perm fs.FileMode, fill func(w io.Writer) error) (err error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+strings.TrimPrefix(name, ".")+TempMark+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}
