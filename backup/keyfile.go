package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/zdnscloud/singlecloud/storage"
)

// LoadKey loads the existing key file at path. Unlike storage's opens it
// never creates one: a new key could not open the secrets of a backup.
// For a missing file, the error says to copy the key of the backup's
// source there (hdr may be nil when no backup is at hand).
func LoadKey(path string, hdr *Header) (storage.Sealer, error) {
	if path == "" {
		return nil, errors.New("no key file given: give the path of the key file the secrets are sealed with")
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		from := "the key file of the source"
		if hdr != nil {
			from = fmt.Sprintf("the key file of the %s the backup was taken from (%s on host %s)", hdr.Source, keyWhere(*hdr), orUnknown(hdr.Host))
		}
		return nil, fmt.Errorf("key file %s does not exist: the secrets can only be opened with the key they were sealed with: "+
			"copy %s to %s (mode 0600)", path, from, path)
	}
	sealer, err := storage.LoadOrCreateKey(path)
	if err != nil {
		return nil, err
	}
	return sealer, nil
}

// CheckSameKey verifies that dst, the key file at dstFile, opens what src
// seals: before a migration writes anything with dst's key.
func CheckSameKey(src, dst storage.Sealer, dstFile string) error {
	aad := keyCheckAAD()
	sealed, err := src.Seal([]byte(keyCheckPlaintext), aad)
	if err != nil {
		return err
	}
	if _, err := dst.Open(sealed, aad); err != nil {
		return fmt.Errorf("the key file %s is not the source's key: give the target the source's key file (a copy of it): %w",
			dstFile, errors.Join(ErrWrongKey, storage.ErrDecrypt))
	}
	return nil
}
