package cli

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestCheckRedirect(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		follow   bool
	}{
		{"https://sc.example:8443/apis/x", "https://sc.example:8443/apis/y", true},
		{"https://sc.example/apis/x", "https://SC.example:443/apis/y", true},
		{"http://sc.example/apis/x", "http://sc.example:80/y", true},
		{"https://sc.example:8443/apis/x", "http://sc.example:8443/apis/x", false}, // scheme only
		{"https://sc.example/apis/x", "http://sc.example/apis/x", false},
		{"https://sc.example:8443/apis/x", "https://sc.example:9443/apis/x", false}, // port only
		{"https://sc.example/apis/x", "https://sc.example:8443/apis/x", false},
		{"https://sc.example/apis/x", "https://evil.sc.example/apis/x", false}, // net/http keeps the token for a subdomain
		{"https://sc.example/apis/x", "https://other.example/apis/x", false},
		{"http://[::1]:8080/x", "http://[::1]:8081/x", false},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		err := checkRedirect(&http.Request{URL: to}, []*http.Request{{URL: from}})
		if tc.follow != (err == nil) {
			t.Errorf("%s -> %s: %v, want follow=%v", tc.from, tc.to, err, tc.follow)
		}
		var re *redirectError
		if err != nil && (!errors.Is(err, errRedirected) || !errors.As(err, &re)) {
			t.Errorf("%s -> %s: %v is not a redirectError", tc.from, tc.to, err)
		}
	}
	via := make([]*http.Request, maxRedirects)
	for i := range via {
		via[i] = &http.Request{URL: &url.URL{Scheme: "http", Host: "h"}}
	}
	if err := checkRedirect(&http.Request{URL: &url.URL{Scheme: "http", Host: "h"}}, via); !errors.Is(err, errRedirected) {
		t.Errorf("redirect %d: %v, want refused", maxRedirects+1, err)
	}
}

// TestRedirectsKeepTheToken: a server that redirects a request (a login's
// POST with the password digest, a read with the token, a websocket) to
// another port or scheme is refused before anything is sent there, with an error that
// names where to log in; a redirect within the server is followed with the
// token.
func TestRedirectsKeepTheToken(t *testing.T) {
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		_, _ = w.Write([]byte(`{"token":"x","type":"collection","data":[]}`))
	}))
	defer other.Close()
	redirector := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/moved") {
				if r.Header.Get("Authorization") != "Bearer tok" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				_, _ = w.Write([]byte(`{"type":"collection","data":[{"name":"lab","status":"Running"}]}`))
				return
			}
			if r.URL.Query().Get("within") != "" {
				http.Redirect(w, r, "/moved"+r.URL.Path, status)
				return
			}
			http.Redirect(w, r, other.URL+r.URL.RequestURI(), status)
		}
	}
	plain := httptest.NewServer(redirector(http.StatusTemporaryRedirect))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(redirector(http.StatusFound))
	defer tlsSrv.Close()

	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dir  string
		args []string
	}{
		{"login to another port", t.TempDir(), []string{"login", "--server", plain.URL, "--user", "admin", "--password-file", pw}},
		{"a read to another port", loggedIn(t, plain.URL), []string{"cluster", "list"}},
		{"https to http", loggedIn(t, tlsSrv.URL), []string{"--insecure-skip-tls-verify", "cluster", "list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, tc.dir, tc.args...)
			want := "log in to " + other.URL + " directly"
			if code != ExitError || !strings.Contains(stderr, want) || !strings.Contains(stderr, "redirected to "+other.URL) {
				t.Errorf("exit %d, out %q, stderr %q; want 1 and %q", code, out, stderr, want)
			}
		})
	}
	if n := stolen.Load(); n != 0 {
		t.Errorf("the other server got %d requests", n)
	}
	c, err := newClient(plain.URL, "tok", tlsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.dial(t.Context(), "/events", nil); !errors.Is(err, errRedirected) || stolen.Load() != 0 {
		t.Errorf("a websocket redirected to another port: %v (%d requests there)", err, stolen.Load())
	}
	objs, err := listObjects(t.Context(), c, "/clusters", url.Values{"within": {"1"}})
	if err != nil || len(objs) != 1 {
		t.Errorf("a redirect within the server: %v %v", objs, err)
	}
}
