package cli

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLS: a server whose certificate is not trusted is refused; one
// signed by --certificate-authority, or --insecure-skip-tls-verify, is
// accepted, and the context keeps the setting for the next commands.
func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/users/admin") && r.URL.Query().Get("action") == "login" {
			_, _ = w.Write([]byte(`{"token":"tok"}`))
			return
		}
		_, _ = w.Write([]byte(`{"type":"collection","data":[{"name":"lab","status":"Running"}]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(pw, []byte("pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	login := []string{"login", "--server", srv.URL, "--user", "admin", "--password-file", pw}
	for _, tc := range []struct {
		name     string
		extra    []string
		wantCode int
		wantErr  string
	}{
		{"untrusted", nil, ExitError, "certificate"},
		{"a CA file that is not one", []string{"--certificate-authority", pw}, ExitError, "no PEM certificate"},
		{"the CA", []string{"--certificate-authority", ca}, ExitOK, ""},
		{"insecure", []string{"--insecure-skip-tls-verify", "--context", "insecure"}, ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, dir, append(login, tc.extra...)...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("exit %d stderr %q, want %d %q", code, stderr, tc.wantCode, tc.wantErr)
			}
		})
	}
	for _, ctx := range []string{"admin@" + strings.TrimPrefix(srv.URL, "https://"), "insecure"} {
		if code, out, stderr := runCLI(t, dir, "--context", ctx, "cluster", "list", "-o", "name"); code != 0 || out != "cluster/lab\n" {
			t.Errorf("context %s: %d %q %q", ctx, code, out, stderr)
		}
	}
}

func TestNewClientRefusesBadServers(t *testing.T) {
	for _, s := range []string{"", "localhost:8080", "ftp://x", "http://"} {
		if _, err := newClient(s, "", tlsOptions{}); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
