package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/snapshots/snapshottest"
	"github.com/zdnscloud/singlecloud/storage"
)

// snapshotService is the test API's cluster manager with its snapshots
// served from a real sealed store: the manager only checks that the
// cluster exists before it calls the same store.
type snapshotService struct {
	ClusterService
	store *snapshots.Store
}

func (s snapshotService) OpenSnapshot(name, id string) (io.ReadCloser, snapshots.Meta, error) {
	return s.store.Open(name, id)
}

// snapshotAPI is a test API over a sealed snapshot store in a temporary
// directory holding one snapshot of cluster c, taken from a real etcd
// with keys keys; it returns the snapshot's plaintext and the paths of
// its sealed file and record.
func snapshotAPI(t *testing.T, keys int) (api *testAPI, m snapshots.Meta, plain []byte, sealed, record string) {
	t.Helper()
	sealer, err := storage.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	store, err := snapshots.Open(dir, sealer, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := snapshottest.Take(t, keys)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if m, err = store.Save(ctx, snapshots.Meta{Cluster: "c", Trigger: "manual"}, bytes.NewReader(src.Data)); err != nil {
		t.Fatal(err)
	}
	api = newTestAPI(t, func(o *Options) { o.Clusters = snapshotService{ClusterService: o.Clusters, store: store} })
	return api, m, src.Data, filepath.Join(dir, "c", m.ID+".snap"), filepath.Join(dir, "c", m.ID+".json")
}

// download GETs the snapshot's bytes: the status, and the body with the
// error that ended reading it.
func download(t *testing.T, api *testAPI, token, id string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, api.URL+apiPrefix+"/clusters/c/snapshots/"+id+"?download=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// TestSnapshotDownloadChecksBeforeItAnswers: a whole snapshot downloads
// with its sha256; one with a flipped byte is answered with the corrupt
// snapshot's error (never a 200 with an empty body); one whose plaintext
// no longer matches its record, found only at its end, breaks off short
// of its Content-Length.
func TestSnapshotDownloadChecksBeforeItAnswers(t *testing.T) {
	api, m, plain, sealed, record := snapshotAPI(t, 100)
	if len(plain) <= sendPiece {
		t.Fatalf("the snapshot is %d bytes, too small to be sent in more than one piece", len(plain))
	}
	token := api.adminToken()

	resp, body, err := download(t, api, token, m.ID)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, plain) || resp.Header.Get("X-Snapshot-Sha256") != m.SHA256 {
		t.Fatalf("whole snapshot: %d, %d bytes (want %d), %v", resp.StatusCode, len(body), len(plain), err)
	}

	// The record's sha256 changed: every chunk authenticates, the check
	// at the end fails, after the status line went out.
	orig, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(orig, &rec); err != nil {
		t.Fatal(err)
	}
	rec["sha256"] = "00" + m.SHA256[2:]
	edited, _ := json.Marshal(rec)
	if err := os.WriteFile(record, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	resp, body, err = download(t, api, token, m.ID)
	if resp.StatusCode != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) || len(body) >= len(plain) {
		t.Errorf("record mismatch: %d, %d of %d bytes, %v; want a 200 broken off short", resp.StatusCode, len(body), len(plain), err)
	}
	if err := os.WriteFile(record, orig, 0o600); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(sealed)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x01
	if err := os.WriteFile(sealed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := api.do(http.MethodGet, apiPrefix+"/clusters/c/snapshots/"+m.ID+"?download=1", token, nil)
	wantError(t, r, http.StatusInternalServerError, CodeServerError, "does not authenticate", "delete it and take a new snapshot")
}
