package cli

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
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

// TestRequestsWaitOutAFailover: a NoLeader answer with Retry-After is
// tried again after the pause it asks for (capped), within failoverWait;
// a 502, which the leader may have received, only for a read.
func TestRequestsWaitOutAFailover(t *testing.T) {
	noLeader := func(w http.ResponseWriter, status int, retryAfter string) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"code":"NoLeader","status":` + strconv.Itoa(status) + `,"type":"error","message":"retry in a few seconds"}`))
	}
	tests := []struct {
		name       string
		method     string
		status     int    // of the NoLeader answers
		retryAfter string // of the NoLeader answers
		failures   int    // NoLeader answers before a 200
		wantTries  int
		wantOK     bool
	}{
		{"a read through an election", http.MethodGet, http.StatusServiceUnavailable, "2", 3, 4, true},
		{"a write not delivered", http.MethodPost, http.StatusServiceUnavailable, "2", 1, 2, true},
		{"a read the leader may have had", http.MethodGet, http.StatusBadGateway, "2", 1, 2, true},
		{"a write the leader may have had", http.MethodPost, http.StatusBadGateway, "2", 1, 1, false},
		{"no Retry-After", http.MethodGet, http.StatusServiceUnavailable, "", 1, 1, false},
		{"longer than failoverWait", http.MethodGet, http.StatusServiceUnavailable, "60", 100, 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tries := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tries++
				if body, _ := io.ReadAll(r.Body); r.Method == http.MethodPost && string(body) != `{"a":1}` {
					t.Errorf("try %d sent %q", tries, body)
				}
				if tries <= tt.failures {
					noLeader(w, tt.status, tt.retryAfter)
					return
				}
				_, _ = w.Write([]byte(`{"ok":true}`))
			}))
			defer srv.Close()
			c, err := newClient(srv.URL, "tok", tlsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var paused time.Duration
			c.sleep = func(_ context.Context, d time.Duration) bool { paused += d; return true }
			var body any
			if tt.method == http.MethodPost {
				body = map[string]int{"a": 1}
			}
			_, err = c.raw(context.Background(), tt.method, "/clusters", nil, body)
			if (err == nil) != tt.wantOK || tries != tt.wantTries {
				t.Errorf("err %v after %d tries; want ok=%v after %d", err, tries, tt.wantOK, tt.wantTries)
			}
			if paused > failoverWait {
				t.Errorf("paused %s in all, more than failoverWait", paused)
			}
			var apiErr *APIError
			if err != nil && (!errors.As(err, &apiErr) || apiErr.Code != "NoLeader") {
				t.Errorf("the error %v does not carry the API's NoLeader", err)
			}
		})
	}
}

// TestCertificateAuthorityIsStoredAbsolute: a relative
// --certificate-authority is kept in the context as an absolute path, so
// the context works from any other directory.
func TestCertificateAuthorityIsStoredAbsolute(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("action") == "login" {
			_, _ = w.Write([]byte(`{"token":"tok"}`))
			return
		}
		_, _ = w.Write([]byte(`{"type":"collection","data":[{"name":"lab","status":"Running"}]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if code, out, stderr := runCLI(t, dir, "login", "--server", srv.URL, "--user", "admin", "--password-file", "pw", "--certificate-authority", "ca.pem"); code != 0 {
		t.Fatalf("login: %d %q %q", code, out, stderr)
	}
	cfg, err := loadConfig(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.context(cfg.CurrentContext).CertificateAuthority, filepath.Join(dir, "ca.pem"); got != want {
		t.Errorf("certificate-authority stored as %q, want %q", got, want)
	}
	t.Chdir(t.TempDir())
	if code, out, stderr := runCLI(t, dir, "cluster", "list", "-o", "name"); code != 0 || out != "cluster/lab\n" {
		t.Errorf("from another directory: %d %q %q", code, out, stderr)
	}
}
