package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestSameServer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"https://sc.example.com", "https://sc.example.com", true},
		{"https://sc.example.com/", "https://sc.example.com", true},
		{"HTTPS://SC.Example.com:443", "https://sc.example.com/", true},
		{"http://10.0.0.1:80", "http://10.0.0.1", true},
		{"http://[::1]:8080/", "http://[::1]:8080", true},
		{"http://[::1]:80", "http://[::1]", true},
		{"https://sc.example.com", "http://sc.example.com", false},
		{"https://sc.example.com:8443", "https://sc.example.com", false},
		{"https://other.example.com", "https://sc.example.com", false},
		{"https://sc.example.com/a", "https://sc.example.com", false},
		{"https://sc.example.com", "", false},
	} {
		if got := sameServer(tc.a, tc.b); got != tc.want {
			t.Errorf("sameServer(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestServerFlagKeepsTheToken: --server naming another server than the
// context's never gets the context's token; naming the same one does.
func TestServerFlagKeepsTheToken(t *testing.T) {
	var (
		ours, theirs atomic.Int32
	)
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ours.Add(1)
		_, _ = w.Write([]byte(`{"type":"collection","data":[]}`))
	}))
	defer own.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			theirs.Add(1)
		}
		_, _ = w.Write([]byte(`{"type":"collection","data":[]}`))
	}))
	defer other.Close()
	dir := loggedIn(t, own.URL)
	for _, tc := range []struct {
		name     string
		server   string
		wantCode int
		want     string
	}{
		{"another server", other.URL, ExitError, "not logged in to " + other.URL},
		{"the context's, written otherwise", strings.ToUpper(own.URL[:4]) + own.URL[4:] + "/", ExitOK, ""},
		{"none", "", ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"cluster", "list", "-o", "name"}
			if tc.server != "" {
				args = append(args, "--server", tc.server)
			}
			code, _, stderr := runCLI(t, dir, args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.wantCode, tc.want)
			}
			if tc.wantCode != ExitOK && !strings.Contains(stderr, "singlecloud login --server "+tc.server) {
				t.Errorf("stderr %q does not say to log in to the server", stderr)
			}
		})
	}
	if theirs.Load() != 0 {
		t.Errorf("the other server got the token %d time(s)", theirs.Load())
	}
	if ours.Load() != 2 {
		t.Errorf("the context's server got %d request(s), want 2", ours.Load())
	}
}
