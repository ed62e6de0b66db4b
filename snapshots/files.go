package snapshots

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// Permissions: snapshots and their records are readable by singlecloud's
// user only.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// writeAtomic writes dir/name through fill: into a temporary file beside
// it, fsynced, renamed into place, and the directory fsynced, so after a
// crash the file is either whole or absent (a temporary leftover is
// removed by Open).
func writeAtomic(dir, name string, fill func(w io.Writer) error) (err error) {
	f, err := os.CreateTemp(dir, "."+name+tempMark+"*")
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(dir, name), err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(fileMode); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(dir, name), err)
	}
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	return durable.SyncDir(dir)
}

// removeIfExists removes path; a missing file is not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// resetScratch removes everything left in the scratch directory (plaintext
// of a save or a drill interrupted by a crash) and recreates it, 0700.
func resetScratch(scratch string) error {
	if err := os.RemoveAll(scratch); err != nil {
		return fmt.Errorf("remove leftover scratch directory %s: %w", scratch, err)
	}
	if err := os.Mkdir(scratch, dirMode); err != nil {
		return fmt.Errorf("create scratch directory %s: %w", scratch, err)
	}
	return nil
}

// cleanClusterDir removes the leftovers of a crash from one cluster's
// directory: files being written, and sealed snapshots whose record was
// never written (crash during Save) or already removed (crash during
// Delete).
func cleanClusterDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read snapshot directory %s: %w", dir, err)
	}
	removed := false
	for _, e := range entries {
		name := e.Name()
		orphan := false
		if id, ok := strings.CutSuffix(name, snapExt); ok && idRE.MatchString(id) {
			_, serr := os.Stat(filepath.Join(dir, id+metaExt))
			orphan = errors.Is(serr, fs.ErrNotExist)
		}
		if !orphan && !(strings.HasPrefix(name, ".") && strings.Contains(name, tempMark)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("remove leftover %s: %w", filepath.Join(dir, name), err)
		}
		removed = true
	}
	if removed {
		return durable.SyncDir(dir)
	}
	return nil
}
