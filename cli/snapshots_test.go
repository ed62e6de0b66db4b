package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotDownloadKeepsNoPartialFile: a download the server refuses
// (a corrupt snapshot's envelope), or one that breaks off part way (fewer
// bytes than announced), fails and leaves no file, not even a temporary
// one; a whole one is written.
func TestSnapshotDownloadKeepsNoPartialFile(t *testing.T) {
	const body = "etcd snapshot bytes"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/corrupt"):
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"code":"ServerError","status":500,"type":"error","message":"snapshot c/corrupt: chunk 0 does not authenticate; delete it and take a new snapshot"}`))
		case strings.HasSuffix(r.URL.Path, "/broken"):
			w.Header().Set("Content-Length", "1000")
			_, _ = w.Write([]byte(body)) // and the handler ends: the server drops the connection
		default:
			w.Header().Set("X-Snapshot-Sha256", "9c1c3a0e6f9e7c0b1a0b3b59e4b0d5b5d6c1e3e0e4a3c1b2d5e6f7a8b9c0d1e2")
			if strings.HasSuffix(r.URL.Path, "/whole") {
				w.Header().Del("X-Snapshot-Sha256")
			}
			_, _ = w.Write([]byte(body))
		}
	}))
	defer srv.Close()
	dir := loggedIn(t, srv.URL)
	out := filepath.Join(t.TempDir(), "snap.db")
	for _, tc := range []struct {
		id, wantErr string
	}{
		{"corrupt", "delete it and take a new snapshot"},
		{"broken", "the transfer broke off after"},
		{"damaged", "the copy is damaged"},
	} {
		code, _, stderr := runCLI(t, dir, "snapshot", "download", "c", tc.id, "-f", out)
		if code != ExitError || !strings.Contains(stderr, tc.wantErr) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", tc.id, code, stderr, tc.wantErr)
		}
		if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 0 {
			t.Errorf("%s: left %v behind", tc.id, left)
		}
	}
	if code, _, stderr := runCLI(t, dir, "snapshot", "download", "c", "whole", "-f", out); code != 0 {
		t.Fatalf("whole: exit %d %q", code, stderr)
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != body {
		t.Errorf("whole: %q %v", got, err)
	}
}
