package zke

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// ErrArchiveOutsideDir classifies an imageArchive that does not name a
// regular file inside the image directory: an absolute path elsewhere, a
// path climbing out with "..", or a symlink leading out of the directory.
var ErrArchiveOutsideDir = errors.New("imageArchive is not a file inside the image directory")

// openImageArchive opens the image archive name inside dir for reading.
// name is relative to dir; an absolute name (stored before archives were
// confined) is accepted only when it lies inside dir. The file is opened
// through an os.Root on dir, so neither ".." nor a symlink can lead out of
// the directory, and it must be a regular file (a FIFO or a device is
// refused without blocking on it). Every failure is user-fixable and names
// the field and the directory.
func openImageArchive(dir, name string) (*os.File, error) {
	if dir == "" {
		return nil, workflow.UserFixable(fmt.Errorf("imageArchive %q: %w: singlecloud was started without an image directory; start it with --image-dir", name, ErrArchiveOutsideDir))
	}
	rel := name
	if filepath.IsAbs(name) {
		r, err := filepath.Rel(dir, name)
		if err != nil {
			r = name
		}
		rel = r
	}
	if !filepath.IsLocal(rel) {
		return nil, workflow.UserFixable(fmt.Errorf("imageArchive %q: %w %s: put the archive there and give its path relative to it", name, ErrArchiveOutsideDir, dir))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, workflow.UserFixable(fmt.Errorf("imageArchive: open the image directory %s: %w (create it, or start singlecloud with another --image-dir)", dir, err))
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, workflow.UserFixable(fmt.Errorf("imageArchive %q in %s: %w (put the archive inside the image directory; a symlink there must not lead out of it)", rel, dir, err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("imageArchive %q in %s: %w", rel, dir, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, workflow.UserFixable(fmt.Errorf("imageArchive %q in %s: %w: it is a %s, not a regular file", rel, dir, ErrArchiveOutsideDir, st.Mode().Type()))
	}
	return f, nil
}
