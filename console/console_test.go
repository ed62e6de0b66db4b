package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestServesThePageAndAssetsWithItsPolicy(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{http.MethodGet, "/", http.StatusOK, "text/html", `<script type="module" src="/ui/app.js">`},
		{http.MethodGet, "/ui/app.js", http.StatusOK, "javascript", "route()"},
		{http.MethodGet, "/ui/style.css", http.StatusOK, "text/css", ":root"},
		{http.MethodHead, "/ui/api.js", http.StatusOK, "javascript", ""},
		{http.MethodGet, "/ui/", http.StatusNotFound, "", ""},
		{http.MethodGet, "/ui/index.html", http.StatusNotFound, "", ""},
		{http.MethodGet, "/ui/../console.go", http.StatusNotFound, "", ""},
		{http.MethodGet, "/ui//etc/passwd", http.StatusNotFound, "", ""},
		{http.MethodGet, "/ui/nosuch.js", http.StatusNotFound, "", ""},
		{http.MethodGet, "/other", http.StatusNotFound, "", ""},
		{http.MethodPost, "/", http.StatusMethodNotAllowed, "", ""},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(tc.method, "http://sc.test/", nil)
		req.URL.Path = tc.path // as sent, not cleaned
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status || !strings.Contains(rec.Header().Get("Content-Type"), tc.ctype) || !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s %s: %d %q %.80q, want %d %q containing %q", tc.method, tc.path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String(), tc.status, tc.ctype, tc.body)
		}
		csp := rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s %s: policy %q lacks %q", tc.method, tc.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-") {
			t.Errorf("%s %s: policy allows %q", tc.method, tc.path, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s %s: headers %v", tc.method, tc.path, rec.Header())
		}
	}
}

// TestRevalidatesWithETag: an unchanged asset costs a 304, so a reload is
// cheap and a new binary's assets are never served stale.
func TestRevalidatesWithETag(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/app.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", rec.Header())
	}
	req := httptest.NewRequest(http.MethodGet, "/ui/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("revalidation: %d with %d bytes, want 304 and none", rec.Code, rec.Body.Len())
	}
}

// TestAssetsLoadNothingFromElsewhere: the console works air-gapped; no
// asset names another origin to load from.
func TestAssetsLoadNothingFromElsewhere(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range h.files {
		s := string(a.body)
		for _, bad := range []string{"http://", "https://", "//cdn", "eval(", "new Function(", "innerHTML"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}
