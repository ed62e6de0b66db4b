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
// when another installation owns it. A directory without the owner file
// (new, or kept by an earlier release) is claimed only if its snapshots
// open with this key: the installation whose snapshots they are is the
// one that may claim it, whichever starts first.
func claim(dir string, sealer storage.Sealer) error {
	path := filepath.Join(dir, ownerFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := ownsSnapshots(dir, sealer); err != nil {
			return err
		}
		// Exclusive: of two installations claiming at once, the
		// first file stays and the other is refused below.
		if err := createOwner(dir, sealer); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("claim %s: %w", dir, err)
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if plain, err := sealer.Open(data, ownerAAD()); err != nil || string(plain) != ownerPlaintext {
		return foreign(dir, "its owner file")
	}
	return nil
}

func foreign(dir, what string) error {
	return fmt.Errorf("snapshot directory %s belongs to another singlecloud installation (%s does not open with this "+
		"installation's key file): give this installation a --snapshot-dir of its own: %w", dir, what, ErrForeignDir)
}

// ownsSnapshots checks that the first sealed snapshot found in dir, if
// any, opens with sealer.
func ownsSnapshots(dir string, sealer storage.Sealer) error {
	clusters, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, c := range clusters {
		if !c.IsDir() || !clusterRE.MatchString(c.Name()) {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, c.Name()))
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(dir, c.Name()), err)
		}
		for _, f := range files {
			id, ok := strings.CutSuffix(f.Name(), snapExt)
			if !ok || !idRE.MatchString(id) {
				continue
			}
			file, err := os.Open(filepath.Join(dir, c.Name(), f.Name()))
			if err != nil {
				return fmt.Errorf("check %s: %w", dir, err)
			}
			_, err = io.ReadFull(newSealedReader(file, sealer, c.Name(), id), make([]byte, 1))
			file.Close()
			if errors.Is(err, ErrCorrupt) {
				return foreign(dir, "snapshot "+c.Name()+"/"+id)
			}
			return nil
		}
	}
	return nil
}

// createOwner writes the owner file, failing with fs.ErrExist if there is
// one: a temporary file, fsynced, linked into place (a link never replaces
// a file), and the directory fsynced.
func createOwner(dir string, sealer storage.Sealer) error {
	sealed, err := sealer.Seal([]byte(ownerPlaintext), ownerAAD())
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+ownerFile+tempMark+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = f.Chmod(fileMode)
	if err == nil {
		_, err = f.Write(sealed)
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
	if err := os.Link(tmp, filepath.Join(dir, ownerFile)); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}
