package snapshots

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zdnscloud/singlecloud/internal/durable"
	"github.com/zdnscloud/singlecloud/storage"
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
func writeAtomic(dir, name string, fill func(w io.Writer) error) error {
	path := filepath.Join(dir, name)
	var fillErr error
	err := durable.WriteFile(path, fileMode, func(w io.Writer) error {
		fillErr = fill(w)
		return fillErr
	})
	if err != nil && err != fillErr {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return err
}

// removeIfExists removes path; a missing file is not an error.
func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// scratchName is the scratch directory's name in the store's directory.
const scratchName = ".scratch"

// resetScratch removes what a crash left in the scratch directory
// (plaintext of a save or a drill), creating the directory (0700, marked)
// if it is missing. Only the store's own leftovers go: save files by their
// exact name, drill directories by their mark; anything else is kept and
// returned, relative to scratch's parent.
func resetScratch(scratch string, sealer storage.Sealer) ([]string, error) {
	if err := mkdirMarked(scratch, sealer, roleScratch); err != nil {
		return nil, fmt.Errorf("create scratch directory %s: %w", scratch, err)
	}
	entries, err := os.ReadDir(scratch)
	if err != nil {
		return nil, fmt.Errorf("read scratch directory %s: %w", scratch, err)
	}
	var kept []string
	for _, e := range entries {
		path := filepath.Join(scratch, e.Name())
		switch {
		case e.Name() == markFile && e.Type().IsRegular():
			continue
		case saveRE.MatchString(e.Name()) && e.Type().IsRegular():
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("remove leftover %s: %w", path, err)
			}
			continue
		case drillRE.MatchString(e.Name()) && e.IsDir():
			state, err := readMark(path, sealer, roleDrill)
			if err != nil {
				return nil, err
			}
			if state == markOurs {
				// The drill made this directory and marked it
				// first: everything in it is the drill's.
				if err := os.RemoveAll(path); err != nil {
					return nil, fmt.Errorf("remove leftover %s: %w", path, err)
				}
				continue
			}
		}
		kept = append(kept, filepath.Join(scratchName, e.Name()))
	}
	if state, err := readMark(scratch, sealer, roleScratch); err != nil {
		return nil, err
	} else if state == markMissing {
		// A scratch directory of an earlier release: mark it now.
		if err := createMark(scratch, sealer, roleScratch); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("mark %s: %w", scratch, err)
		}
	}
	return kept, nil
}

// cleanClusterDir removes the leftovers of a crash from the directory of
// cluster: files being written, and sealed snapshots whose record was
// never written (crash during Save) or already removed (crash during
// Delete), when they open with sealer as that cluster's. It returns the
// names it kept that the store does not write, relative to dir's parent.
func cleanClusterDir(dir, cluster string, sealer storage.Sealer) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read snapshot directory %s: %w", dir, err)
	}
	var kept []string
	removed := false
	for _, e := range entries {
		kind, id := classify(e)
		remove := kind == entryTemp
		switch kind {
		case entryOther:
			kept = append(kept, filepath.Join(cluster, e.Name()))
		case entrySnap:
			if _, serr := os.Stat(filepath.Join(dir, id+metaExt)); !errors.Is(serr, fs.ErrNotExist) {
				continue
			}
			state, err := provenSnapshot(filepath.Join(dir, e.Name()), sealer, cluster, id)
			if err != nil {
				return nil, err
			}
			if remove = state == sealedOurs; !remove {
				kept = append(kept, filepath.Join(cluster, e.Name()))
			}
		}
		if !remove {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return nil, fmt.Errorf("remove leftover %s: %w", filepath.Join(dir, e.Name()), err)
		}
		removed = true
	}
	if removed {
		return kept, durable.SyncDir(dir)
	}
	return kept, nil
}
