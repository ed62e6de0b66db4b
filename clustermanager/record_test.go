package clustermanager

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

func TestRecordSecretsBoundToTheirRow(t *testing.T) {
	store := storagetest.Open(t)
	sealer := store.Sealer()
	enc := func(name, kubeconfig string) map[string]json.RawMessage {
		t.Helper()
		b, err := encodeRecord(&record{Name: name, Kind: KindImported, Status: fsm.StateRunning,
			secrets: secrets{Kubeconfig: []byte(kubeconfig)}}, sealer)
		if err != nil {
			t.Fatal(err)
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(b, &row); err != nil {
			t.Fatal(err)
		}
		return row
	}
	a, b := enc("alpha", "kubeconfig of alpha"), enc("beta", "kubeconfig of beta")

	// The sealed secrets of alpha pasted into beta's row do not open.
	b["sealed"] = a["sealed"]
	swapped, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := decodeRecord(swapped, sealer)
	if !errors.Is(err, storage.ErrDecrypt) || !strings.Contains(err.Error(), "beta") || !strings.Contains(err.Error(), "another row") {
		t.Fatalf("decode of beta carrying alpha's secrets: error = %v, want ErrDecrypt naming beta and the row swap", err)
	}
	if rec != nil && len(rec.secrets.Kubeconfig) != 0 {
		t.Errorf("swapped secrets leaked into the record: %q", rec.secrets.Kubeconfig)
	}

	// Unchanged rows still open.
	orig, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := decodeRecord(orig, sealer); err != nil || string(rec.secrets.Kubeconfig) != "kubeconfig of alpha" {
		t.Fatalf("decode of an untouched row = %v, %v", rec, err)
	}
}

// TestRecordSealedBeforeRowBindingStillReads: a row written by a
// singlecloud from before row binding (seal version 1) is read by the
// migration's decodeLegacyRecord (never by decodeRecord), and its next
// save binds it.
func TestRecordSealedBeforeRowBindingStillReads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "singlecloud.db")
	store, err := storage.OpenBolt(path, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	key, err := os.ReadFile(path + ".key")
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := json.Marshal(secrets{SSHKey: "old ssh key"})
	old, err := json.Marshal(diskRecord{
		record: record{Name: "legacy", Kind: KindCreated, Status: fsm.StateRunning},
		Sealed: sealVersion1(t, key, plain),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeRecord(old, store.Sealer()); !errors.Is(err, storage.ErrDecrypt) {
		t.Fatalf("decodeRecord of a version 1 row = %v, want ErrDecrypt", err)
	}
	rec, unbound, err := decodeLegacyRecord(old, store.Sealer())
	if err != nil || !unbound || rec.secrets.SSHKey != "old ssh key" {
		t.Fatalf("decodeLegacyRecord of a version 1 row = %+v, %v, %v", rec, unbound, err)
	}
	resaved, err := encodeRecord(rec, store.Sealer())
	if err != nil {
		t.Fatal(err)
	}
	var d diskRecord
	if err := json.Unmarshal(resaved, &d); err != nil {
		t.Fatal(err)
	}
	if storage.IsUnbound(d.Sealed) {
		t.Error("the re-saved row is still sealed without row binding")
	}
}

// sealVersion1 seals plain as singlecloud did before row binding: version
// byte 1, a nonce, and AES-GCM with only the version byte authenticated.
func sealVersion1(t *testing.T, key, plain []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 1+aead.NonceSize())
	out[0] = 1
	return aead.Seal(out, out[1:], plain, out[:1])
}
