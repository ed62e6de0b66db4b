package durable

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TempMark is in the name of the temporary file CreateFile writes first:
// ".<name without its leading dot>.tmp-<digits>". A crash can leave one.
const TempMark = ".tmp-"

// CreateFile writes data to dir/name, a new file of mode perm, failing
// with an error wrapping fs.ErrExist if dir/name exists. The data goes to
// a temporary file beside it, fsynced, linked into place (a link, unlike a
// rename, never replaces a file: of two callers creating one name, exactly
// one succeeds) and the directory fsynced, so that after a crash the file
// is whole or absent.
func CreateFile(dir, name string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(dir, "."+strings.TrimPrefix(name, ".")+TempMark+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return SyncDir(dir)
}
