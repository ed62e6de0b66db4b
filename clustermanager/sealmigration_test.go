package clustermanager

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/storage"
)

// TestLoadBindsLegacySealsOnce: the first Load re-seals the secrets of a
// row an older singlecloud sealed without row binding, bound to the row,
// and records that it did; after that, a version 1 value put into a row
// (it can only have come from another row) is refused, and that cluster
// alone loads as damaged.
func TestLoadBindsLegacySealsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "singlecloud.db")
	store, err := storage.OpenBolt(path, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	key, err := os.ReadFile(path + ".key")
	if err != nil {
		t.Fatal(err)
	}
	// Unavailable imported clusters: Load starts no work for them.
	row := func(name string, s secrets, v1 bool) []byte {
		t.Helper()
		rec := &record{Name: name, Kind: KindImported, Status: fsm.StateUnavailable, Unavailable: true, Reason: "unreachable", secrets: s}
		b, err := encodeRecord(rec, store.Sealer())
		if err != nil {
			t.Fatal(err)
		}
		if !v1 {
			return b
		}
		plain, _ := json.Marshal(s)
		b, err = json.Marshal(diskRecord{record: *rec, Sealed: sealVersion1(t, key, plain)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	get := func(name string) []byte {
		t.Helper()
		b, err := store.Get(storage.BucketClusters, name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	put := func(name string, b []byte) {
		t.Helper()
		if err := store.Put(storage.BucketClusters, name, b); err != nil {
			t.Fatal(err)
		}
	}
	put("legacy", row("legacy", secrets{Kubeconfig: []byte("legacy kubeconfig")}, true))
	put("bound", row("bound", secrets{Kubeconfig: []byte("bound kubeconfig")}, false))
	boundBefore := get("bound")

	h := newHarness(t, store)
	for _, name := range []string{"legacy", "bound"} {
		if c, err := h.m.Get(name); err != nil || strings.Contains(c.Reason, "damaged") {
			t.Fatalf("first load of %s: %+v, %v; want it loaded", name, c, err)
		}
	}
	raw := get("legacy")
	var d diskRecord
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if storage.IsUnbound(d.Sealed) {
		t.Fatal("the legacy row is still sealed without row binding after Load")
	}
	if rec, err := decodeRecord(raw, store.Sealer()); err != nil || string(rec.secrets.Kubeconfig) != "legacy kubeconfig" {
		t.Fatalf("the re-sealed row decodes to %+v, %v; want its kubeconfig kept", rec, err)
	}
	if string(get("bound")) != string(boundBefore) {
		t.Error("a row already bound was rewritten")
	}
	if _, err := store.Get(storage.BucketSettings, storage.SettingClusterSecretsBound); err != nil {
		t.Fatalf("the migration was not recorded: %v", err)
	}
	h.stop()

	// A version 1 value swapped into a row after the migration.
	planted := row("bound", secrets{Kubeconfig: []byte("planted kubeconfig")}, true)
	put("bound", planted)
	if _, err := decodeRecord(planted, store.Sealer()); !errors.Is(err, storage.ErrDecrypt) {
		t.Fatalf("decode of a version 1 row after the migration = %v, want ErrDecrypt", err)
	}
	h = newHarness(t, store)
	c, err := h.m.Get("bound")
	if err != nil || c.Status != fsm.StateUnavailable || !strings.Contains(c.Reason, "damaged") || !strings.Contains(c.Reason, "row binding") {
		t.Fatalf("the row with a planted version 1 value: %+v, %v; want Unavailable, damaged", c, err)
	}
	if c, err := h.m.Get("legacy"); err != nil || strings.Contains(c.Reason, "damaged") {
		t.Fatalf("the migrated row on the second load: %+v, %v", c, err)
	}
	if string(get("bound")) != string(planted) {
		t.Fatal("the second load rewrote (re-sealed) a version 1 value planted after the migration")
	}
}
