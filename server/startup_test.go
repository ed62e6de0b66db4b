package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestStartupRefusesUntilReady: while the process starts, only the probes
// answer (alive, not ready); every other request, logins included, gets
// 503 NoLeader with Retry-After; once ready, everything goes to the API.
func TestStartupRefusesUntilReady(t *testing.T) {
	st := NewStartup(StartupOptions{})
	hs := httptest.NewServer(st)
	defer hs.Close()
	a := &testAPI{t: t, URL: hs.URL}
	if r := a.do(http.MethodGet, healthzPath, "", nil); r.Status != http.StatusOK || !jsonEqual(r.JSON(t), map[string]any{"status": "ok"}) {
		t.Fatalf("healthz while starting: %d %s", r.Status, r.Body)
	}
	if r := a.do(http.MethodGet, readyzPath, "", nil); r.Status != http.StatusServiceUnavailable ||
		!jsonEqual(r.JSON(t), map[string]any{"status": "starting"}) {
		t.Fatalf("readyz while starting: %d %s", r.Status, r.Body)
	}
	for _, req := range []struct{ method, path string }{
		{http.MethodPost, apiPrefix + "/users/admin?action=login"},
		{http.MethodGet, apiPrefix + "/clusters"},
		{http.MethodGet, versionPath},
		{http.MethodPost, healthzPath},
		{http.MethodGet, "/"},
	} {
		r := a.do(req.method, req.path, "", "{}")
		wantError(t, r, http.StatusServiceUnavailable, CodeNoLeader, startingMessage)
		if r.Header.Get("Retry-After") != retryAfterNoLeader {
			t.Fatalf("%s %s: Retry-After %q", req.method, req.path, r.Header.Get("Retry-After"))
		}
	}
	st.Ready(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	for _, path := range []string{healthzPath, readyzPath, apiPrefix + "/clusters"} {
		if r := a.do(http.MethodGet, path, "", nil); r.Status != http.StatusTeapot {
			t.Fatalf("%s once ready: %d, want the API's 418", path, r.Status)
		}
	}
}
