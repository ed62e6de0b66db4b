package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testAAD binds the test values to one row.
func testAAD() []byte { return AAD(BucketClusters, "c1") }

func newTestSealer(t *testing.T) Sealer {
	t.Helper()
	s, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "test.key"))
	if err != nil {
		t.Fatalf("LoadOrCreateKey: %v", err)
	}
	return s
}

func TestSealerRoundTrip(t *testing.T) {
	s := newTestSealer(t)
	for _, plain := range [][]byte{
		{},
		[]byte("x"),
		[]byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnot really\n"),
		bytes.Repeat([]byte{0xAB}, 1<<16),
	} {
		sealed, err := s.Seal(plain, testAAD())
		if err != nil {
			t.Fatalf("Seal(%d bytes): %v", len(plain), err)
		}
		// A short plaintext may occur in random ciphertext by chance;
		// from 8 bytes on that is a 2^-64 event.
		if len(plain) >= 8 && bytes.Contains(sealed, plain) {
			t.Errorf("sealed value of %d bytes contains the plaintext", len(plain))
		}
		if sealed[0] != sealVersion {
			t.Errorf("version byte = %d, want %d", sealed[0], sealVersion)
		}
		got, err := s.Open(sealed, testAAD())
		if err != nil {
			t.Fatalf("Open(Seal(%d bytes)): %v", len(plain), err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("Open(Seal(p)) = %d bytes, want the %d bytes of p", len(got), len(plain))
		}
	}
}

func TestSealerFreshNoncePerSeal(t *testing.T) {
	s := newTestSealer(t)
	a, errA := s.Seal([]byte("same secret"), testAAD())
	b, errB := s.Seal([]byte("same secret"), testAAD())
	if errA != nil || errB != nil {
		t.Fatalf("Seal: %v, %v", errA, errB)
	}
	if bytes.Equal(a, b) {
		t.Fatal("two seals of the same plaintext are identical: the nonce is not fresh")
	}
}

func TestSealerTamperDetected(t *testing.T) {
	s := newTestSealer(t)
	sealed, err := s.Seal([]byte("kubeconfig contents"), testAAD())
	if err != nil {
		t.Fatal(err)
	}
	// Flipping any single byte (version, nonce, ciphertext or tag) must be
	// detected.
	for i := range sealed {
		bad := bytes.Clone(sealed)
		bad[i] ^= 0x01
		if _, err := s.Open(bad, testAAD()); !errors.Is(err, ErrDecrypt) {
			t.Errorf("byte %d flipped: Open error = %v, want ErrDecrypt", i, err)
		}
	}
	for _, n := range []int{0, 1, 12, len(sealed) - 1} {
		if _, err := s.Open(sealed[:n], testAAD()); !errors.Is(err, ErrDecrypt) {
			t.Errorf("truncated to %d bytes: Open error = %v, want ErrDecrypt", n, err)
		}
	}
}

func TestSealerWrongKey(t *testing.T) {
	a, b := newTestSealer(t), newTestSealer(t)
	sealed, err := a.Seal([]byte("ssh key"), testAAD())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(sealed, testAAD()); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("Open with another key: error = %v, want ErrDecrypt", err)
	}
}

func TestLoadOrCreateKeyCreatesPrivateFileAndReloadsIt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db.key")
	first, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 || info.Size() != KeySize {
		t.Errorf("key file mode %v size %d, want -rw------- and %d bytes", info.Mode().Perm(), info.Size(), KeySize)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after creating the key, want only the key file (no temp left)", len(entries))
	}

	second, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := first.Seal([]byte("secret"), testAAD())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := second.Open(sealed, testAAD()); err != nil || string(got) != "secret" {
		t.Fatalf("reloaded key cannot open a value sealed before: %q, %v", got, err)
	}
}

func TestLoadOrCreateKeyConcurrentCreatorsAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.key")
	const n = 8
	sealers := make([]Sealer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { sealers[i], errs[i] = LoadOrCreateKey(path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("creator %d: %v", i, err)
		}
	}
	sealed, err := sealers[0].Seal([]byte("secret"), testAAD())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sealers {
		if _, err := s.Open(sealed, testAAD()); err != nil {
			t.Errorf("creator %d got a different key: %v", i, err)
		}
	}
}

func TestLoadOrCreateKeyRefusesBadFiles(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, path string)
		wantMsg string
	}{
		{
			name: "group readable",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, bytes.Repeat([]byte{1}, KeySize), 0o640)
			},
			wantMsg: "chmod 600",
		},
		{
			name: "world readable",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, bytes.Repeat([]byte{1}, KeySize), 0o604)
			},
			wantMsg: "chmod 600",
		},
		{
			name: "too short",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, []byte("short"), 0o600)
			},
			wantMsg: "has 5 bytes",
		},
		{
			name: "too long",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, bytes.Repeat([]byte{1}, KeySize+1), 0o600)
			},
			wantMsg: "has 33 bytes",
		},
		{
			name: "a directory",
			setup: func(t *testing.T, path string) {
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			wantMsg: "not a regular file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "db.key")
			tt.setup(t, path)
			before, _ := os.ReadFile(path)
			_, err := LoadOrCreateKey(path)
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error = %v, want one naming %s and saying %q", err, path, tt.wantMsg)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Error("a refused key file was modified")
			}
		})
	}
}

func TestLoadOrCreateKeyMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "db.key")
	if _, err := LoadOrCreateKey(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error = %v, want one naming %s", err, path)
	}
}

// writeFile writes data with exactly mode perm (os.WriteFile is subject to
// the umask).
func writeFile(t *testing.T, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func TestSealerBindsValueToItsRow(t *testing.T) {
	s := newTestSealer(t)
	sealed, err := s.Seal([]byte("kubeconfig of c1"), AAD(BucketClusters, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		aad  []byte
	}{
		{"another key of the same bucket", AAD(BucketClusters, "c2")},
		{"the same key in another bucket", AAD(BucketUsers, "c1")},
		{"a key that extends the original", AAD(BucketClusters, "c1x")},
		{"bucket and key split elsewhere", AAD(Bucket("clustersc"), "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Open(sealed, tc.aad)
			if !errors.Is(err, ErrDecrypt) || !strings.Contains(err.Error(), "another row") {
				t.Fatalf("Open with the AAD of %s: error = %v, want ErrDecrypt saying it may come from another row", tc.name, err)
			}
		})
	}
	if _, err := s.Seal([]byte("x"), nil); err == nil {
		t.Error("Seal without AAD succeeded; every value must be bound to its row")
	}
	if _, err := s.Open(sealed, nil); err == nil {
		t.Error("Open without AAD succeeded")
	}
}

// sealUnbound makes a value the way singlecloud did before row binding
// (seal version 1: only the version byte authenticated).
func sealUnbound(t *testing.T, s Sealer, plain []byte) []byte {
	t.Helper()
	a := s.(*aesSealer)
	out := make([]byte, 1+a.aead.NonceSize())
	out[0] = sealVersionUnbound
	for i := range out[1:] {
		out[1+i] = byte(i * 7)
	}
	return a.aead.Seal(out, out[1:], plain, out[:1])
}

func TestSealerUnboundValues(t *testing.T) {
	s := newTestSealer(t)
	old := sealUnbound(t, s, []byte("old secret"))
	if !IsUnbound(old) {
		t.Fatal("IsUnbound(version 1 value) = false")
	}
	if _, err := s.Open(old, testAAD()); !errors.Is(err, ErrDecrypt) {
		t.Errorf("Open(version 1 value) error = %v, want ErrDecrypt: unbound values are read only through OpenUnbound", err)
	}
	plain, err := OpenUnbound(s, old)
	if err != nil || string(plain) != "old secret" {
		t.Fatalf("OpenUnbound = %q, %v", plain, err)
	}
	current, err := s.Seal([]byte("new"), testAAD())
	if err != nil {
		t.Fatal(err)
	}
	if IsUnbound(current) {
		t.Error("a new seal is reported as unbound")
	}
	if _, err := OpenUnbound(s, current); !errors.Is(err, ErrDecrypt) {
		t.Errorf("OpenUnbound(version 2 value) error = %v, want ErrDecrypt", err)
	}
	other := newTestSealer(t)
	if _, err := OpenUnbound(other, old); !errors.Is(err, ErrDecrypt) {
		t.Errorf("OpenUnbound with another key: error = %v, want ErrDecrypt", err)
	}
}
