package storage

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// Sealer encrypts secrets (SSH keys, private keys, kubeconfigs, the token
// signing secret, token stamps) before they are written to the Store and
// decrypts them when they are read back, so a copy of the database file
// alone reveals no secret.
//
// Every value is bound to where it is stored: aad is the additional
// authenticated data, made by AAD(bucket, key) for the row the value is
// written to. A sealed value copied to another row does not open there, so
// someone who can write the file but not read the key cannot swap secrets
// between clusters or users.
type Sealer interface {
	// Seal returns an authenticated ciphertext of plaintext bound to aad;
	// two calls on the same plaintext give different results.
	Seal(plaintext, aad []byte) ([]byte, error)
	// Open returns the plaintext of a value made by Seal with the same key
	// and the same aad. A value sealed with another key or for another row,
	// or altered in any way, fails with an error wrapping ErrDecrypt (AES-GCM
	// cannot tell these apart; the message names them all). A value of seal
	// version 1, made before values were bound to rows, is refused here:
	// see OpenUnbound.
	Open(sealed, aad []byte) ([]byte, error)
}

// KeySize is the size in bytes of a key file: an AES-256 key.
const KeySize = 32

// Seal versions: the first byte of every sealed value. A change of
// algorithm or of what is authenticated gets a new version byte, so old
// values stay readable.
const (
	// sealVersionUnbound values (singlecloud before row binding)
	// authenticate only the version byte.
	sealVersionUnbound byte = 1
	// sealVersion values authenticate the version byte and the row's AAD.
	sealVersion byte = 2
)

// aadPrefix starts every AAD, so that a value sealed for singlecloud's
// rows can never be confused with one sealed for another purpose.
const aadPrefix = "singlecloud/row\x00"

// AAD returns the additional authenticated data that binds a sealed value
// to key of bucket b. The parts are separated by NUL, which bucket names
// and keys never contain, so two rows never share an AAD.
func AAD(b Bucket, key string) []byte {
	aad := make([]byte, 0, len(aadPrefix)+len(b)+1+len(key))
	aad = append(aad, aadPrefix...)
	aad = append(aad, b...)
	aad = append(aad, 0)
	return append(aad, key...)
}

// IsUnbound reports whether sealed was made by a singlecloud from before
// values were bound to their rows (seal version 1). Such values are
// re-sealed with Seal the next time their row is saved.
func IsUnbound(sealed []byte) bool {
	return len(sealed) > 0 && sealed[0] == sealVersionUnbound
}

// OpenUnbound opens a seal-version-1 value, which is bound to no row. Only
// rows written before row binding hold such values (the cluster records'
// secrets); everything else must use Sealer.Open. s must be a Sealer made
// by this package.
func OpenUnbound(s Sealer, sealed []byte) ([]byte, error) {
	a, ok := s.(*aesSealer)
	if !ok {
		return nil, fmt.Errorf("open a version %d sealed value: the sealer %T cannot read it: %w", sealVersionUnbound, s, ErrDecrypt)
	}
	if !IsUnbound(sealed) {
		return nil, fmt.Errorf("sealed value is not of version %d: open it with Sealer.Open: %w", sealVersionUnbound, ErrDecrypt)
	}
	return a.open(sealed, nil)
}

// keyFileMode is the only permission a key file may have: whoever can read
// it can read every secret of the database.
const keyFileMode fs.FileMode = 0o600

// aesSealer is the AES-256-GCM Sealer. It holds only the cipher, never the
// raw key, so the key cannot leak through printing the value.
type aesSealer struct {
	aead cipher.AEAD
}

// LoadOrCreateKey returns the Sealer for the key file at path. If the file
// does not exist, a random key is written to a temporary file beside it
// (mode 0600, fsynced) and linked into place only if path is still absent, so
// two processes starting together never end up with different keys. An
// existing file is refused if it is not KeySize bytes or if group or others
// have any permission on it.
func LoadOrCreateKey(path string) (Sealer, error) {
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = createKeyFile(path)
	}
	if err != nil {
		return nil, err
	}
	return newAESSealer(key)
}

// Seal encrypts plaintext with a fresh random nonce. The result is
// version byte || nonce || ciphertext+tag; the version byte and aad are
// authenticated.
func (s *aesSealer) Seal(plaintext, aad []byte) ([]byte, error) {
	if len(aad) == 0 {
		return nil, errors.New("seal secret: empty AAD: bind the value to its row with storage.AAD")
	}
	nonceSize := s.aead.NonceSize()
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+s.aead.Overhead())
	out[0] = sealVersion
	if _, err := io.ReadFull(rand.Reader, out[1:]); err != nil {
		return nil, fmt.Errorf("seal secret: read random nonce: %w", err)
	}
	return s.aead.Seal(out, out[1:], plaintext, additionalData(out[0], aad)), nil
}

// Open decrypts a value made by Seal for the same aad.
func (s *aesSealer) Open(sealed, aad []byte) ([]byte, error) {
	if len(aad) == 0 {
		return nil, errors.New("open secret: empty AAD: give the storage.AAD of the value's row")
	}
	if IsUnbound(sealed) {
		return nil, fmt.Errorf("sealed value has format version %d, which is bound to no row; it is read only where rows "+
			"written before version %d are expected: %w", sealVersionUnbound, sealVersion, ErrDecrypt)
	}
	return s.open(sealed, aad)
}

// open checks the version byte and decrypts; aad is nil for version 1.
func (s *aesSealer) open(sealed, aad []byte) ([]byte, error) {
	nonceSize := s.aead.NonceSize()
	if len(sealed) < 1+nonceSize+s.aead.Overhead() {
		return nil, fmt.Errorf("sealed value is %d bytes, too short to be a sealed secret: %w", len(sealed), ErrDecrypt)
	}
	if sealed[0] != sealVersion && sealed[0] != sealVersionUnbound {
		return nil, fmt.Errorf("sealed value has format version %d, this singlecloud reads versions %d and %d: %w",
			sealed[0], sealVersionUnbound, sealVersion, ErrDecrypt)
	}
	plain, err := s.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], additionalData(sealed[0], aad))
	if err != nil {
		return nil, fmt.Errorf("the value was sealed for another row (copied from elsewhere in the database), "+
			"or with another key file, or it is corrupt: restore the row or the key file from the same backup: %w", ErrDecrypt)
	}
	return plain, nil
}

// additionalData is what a value of the given version authenticates
// besides its ciphertext: the version byte, then (version 2) the row's AAD.
func additionalData(version byte, aad []byte) []byte {
	ad := make([]byte, 0, 1+len(aad))
	ad = append(ad, version)
	return append(ad, aad...)
}

func newAESSealer(key []byte) (*aesSealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("create AES cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("create AES-GCM: %w", err)
	}
	return &aesSealer{aead: aead}, nil
}

// readKeyFile reads and checks an existing key file. A missing file is
// reported with an error wrapping fs.ErrNotExist.
func readKeyFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file: point the key file option at singlecloud's key file", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %#o, readable by others: run `chmod 600 %s`", path, perm, path)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("key file %s has %d bytes, a singlecloud key has %d: restore the key file the database was created with",
			path, len(key), KeySize)
	}
	return key, nil
}

// createKeyFile writes a new random key to path atomically. If another
// process created path meanwhile, its key is used instead.
func createKeyFile(path string) ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := io.ReadFull(rand.Reader, key); err != nil {
		return nil, fmt.Errorf("create key file %s: read random key: %w", path, err)
	}
	err := installKey(path, key)
	if errors.Is(err, fs.ErrExist) {
		return readKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("create key file %s: %w", path, err)
	}
	return key, nil
}

// CopyKeyFile copies the key file src to dst, a new file (0600, fsynced,
// written whole or not at all): for a database that will hold secrets
// sealed with src's key. An existing dst is never replaced (fs.ErrExist).
func CopyKeyFile(src, dst string) error {
	key, err := readKeyFile(src)
	if err != nil {
		return err
	}
	if err := installKey(dst, key); err != nil {
		return fmt.Errorf("copy key file %s to %s: %w", src, dst, err)
	}
	return nil
}

// installKey writes key to path, a new file: fs.ErrExist if path exists.
func installKey(path string, key []byte) error {
	dir := filepath.Dir(path)
	tmp, err := writeTempKey(dir, key)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	// Link, unlike rename, fails if path exists: a key another process has
	// just created is never replaced.
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

// writeTempKey writes key to a new fsynced 0600 file in dir and returns its
// name.
func writeTempKey(dir string, key []byte) (string, error) {
	f, err := os.CreateTemp(dir, ".singlecloud-key-*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	err = f.Chmod(keyFileMode)
	if err == nil {
		_, err = f.Write(key)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}
