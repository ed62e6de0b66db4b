package cli

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestStreamStalls: a stream (a snapshot download) that stops sending,
// before its headers or in its body, fails after the idle bound instead
// of hanging; one that keeps sending, however slowly, completes.
func TestStreamStalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		serve   func(w http.ResponseWriter, r *http.Request)
		wantErr string
		want    string
	}{
		{"stalls before its headers", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, "the stream stalled", ""},
		{"stalls in its body", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("part"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, "the stream stalled: nothing came from", "part"},
		{"slow but steady", func(w http.ResponseWriter, r *http.Request) {
			for range 6 {
				_, _ = w.Write([]byte("x"))
				w.(http.Flusher).Flush()
				time.Sleep(100 * time.Millisecond)
			}
		}, "", "xxxxxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(tc.serve))
			defer srv.Close()
			c, err := newClient(srv.URL, "tok", tlsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.idle = 300 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			var got []byte
			resp, err := c.stream(ctx, "/x", nil)
			if err == nil {
				got, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			if string(got) != tc.want {
				t.Errorf("read %q, want %q", got, tc.want)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	if tr := mustClient(t).http.Transport.(*http.Transport); tr.ResponseHeaderTimeout != requestTimeout {
		t.Errorf("ResponseHeaderTimeout %s, want %s", tr.ResponseHeaderTimeout, requestTimeout)
	}
}

func mustClient(t *testing.T) *client {
	t.Helper()
	c, err := newClient("https://sc.example.com", "tok", tlsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
