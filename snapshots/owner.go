package snapshots

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zdnscloud/singlecloud/storage"
)

// ownerFile marks the installation a snapshot directory belongs to: a
// constant sealed with the installation's key. Its replicas share the key
// (and may share the directory); another installation's key cannot open
// it. Two installations given one directory (two databases in one folder,
// two etcd prefixes whose key files sit side by side) would otherwise
// overwrite, prune and delete each other's snapshots of same-named
// clusters.
const ownerFile = ".owner"

const ownerPlaintext = "singlecloud snapshot directory"

func ownerAAD() []byte { return storage.AAD("snapshots", ownerFile) }

// claim makes dir this installation's, or refuses it with ErrForeignDir
// when another installation's key sealed its owner file.
func claim(dir string, sealer storage.Sealer) error {
	path := filepath.Join(dir, ownerFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		sealed, serr := sealer.Seal([]byte(ownerPlaintext), ownerAAD())
		if serr != nil {
			return serr
		}
		if werr := writeAtomic(dir, ownerFile, func(w io.Writer) error {
			_, err := w.Write(sealed)
			return err
		}); werr != nil {
			return werr
		}
		// Read back: of two installations claiming the directory at
		// once, the one whose file stayed owns it.
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if plain, err := sealer.Open(data, ownerAAD()); err != nil || string(plain) != ownerPlaintext {
		return fmt.Errorf("snapshot directory %s belongs to another singlecloud installation (its key file is not this "+
			"one's): give this installation a --snapshot-dir of its own: %w", dir, ErrForeignDir)
	}
	return nil
}
