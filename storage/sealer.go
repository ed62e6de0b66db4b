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
)

// Sealer encrypts secrets (SSH keys, private keys, kubeconfigs) before they
// are written to the Store and decrypts them when they are read back, so a
// copy of the database file alone reveals no secret.
type Sealer interface {
	// Seal returns an authenticated ciphertext of plaintext; two calls on
	// the same plaintext give different results.
	Seal(plaintext []byte) ([]byte, error)
	// Open returns the plaintext of a value made by Seal with the same key.
	// A value sealed with another key, or altered in any way, fails with an
	// error wrapping ErrDecrypt.
	Open(sealed []byte) ([]byte, error)
}

// KeySize is the size in bytes of a key file: an AES-256 key.
const KeySize = 32

// sealVersion is the first byte of every sealed value. A future change of
// algorithm gets a new version byte, so old values stay readable.
const sealVersion byte = 1

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
// version byte || nonce || ciphertext+tag; the version byte is authenticated.
func (s *aesSealer) Seal(plaintext []byte) ([]byte, error) {
	nonceSize := s.aead.NonceSize()
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+s.aead.Overhead())
	out[0] = sealVersion
	if _, err := io.ReadFull(rand.Reader, out[1:]); err != nil {
		return nil, fmt.Errorf("seal secret: read random nonce: %w", err)
	}
	return s.aead.Seal(out, out[1:], plaintext, out[:1]), nil
}

// Open decrypts a value made by Seal.
func (s *aesSealer) Open(sealed []byte) ([]byte, error) {
	nonceSize := s.aead.NonceSize()
	if len(sealed) < 1+nonceSize+s.aead.Overhead() {
		return nil, fmt.Errorf("sealed value is %d bytes, too short to be a sealed secret: %w", len(sealed), ErrDecrypt)
	}
	if sealed[0] != sealVersion {
		return nil, fmt.Errorf("sealed value has format version %d, this singlecloud reads version %d: %w",
			sealed[0], sealVersion, ErrDecrypt)
	}
	plain, err := s.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], sealed[:1])
	if err != nil {
		return nil, fmt.Errorf("the key file is not the one this secret was sealed with, or the value is corrupt: %w", ErrDecrypt)
	}
	return plain, nil
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
	dir := filepath.Dir(path)
	tmp, err := writeTempKey(dir, key)
	if err != nil {
		return nil, fmt.Errorf("create key file %s: %w", path, err)
	}
	defer os.Remove(tmp)
	// Link, unlike rename, fails if path exists: a key another process has
	// just created is never replaced.
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKeyFile(path)
		}
		return nil, fmt.Errorf("create key file %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("create key file %s: %w", path, err)
	}
	return key, nil
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

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
