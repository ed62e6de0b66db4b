package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHealthAndVersionNeedNoToken(t *testing.T) {
	storeErr := errors.New("store closed at /secret/path")
	var failing atomic.Bool
	api := newTestAPI(t, func(o *Options) {
		o.Version = VersionInfo{Version: "v9.8.7", Commit: "abc123", BuildDate: "2026-01-02T03:04:05Z", GoVersion: "go1.26"}
		o.Ready = []ReadinessCheck{
			{Name: "store", Check: func(context.Context) error {
				if failing.Load() {
					return storeErr
				}
				return nil
			}},
			{Name: "workers", Check: func(context.Context) error { return nil }},
		}
	})
	tests := []struct {
		name, method, path string
		status             int
		want               map[string]any
	}{
		{"healthz", http.MethodGet, "/healthz", 200, map[string]any{"status": "ok"}},
		{"readyz", http.MethodGet, "/readyz", 200, map[string]any{"status": "ready", "checks": map[string]any{"store": "ok", "workers": "ok"}}},
		{"version", http.MethodGet, apiPrefix + "/version", 200, map[string]any{
			"id": "version", "type": "version", "links": map[string]any{"self": apiPrefix + "/version"},
			"version": "v9.8.7", "commit": "abc123", "buildDate": "2026-01-02T03:04:05Z", "goVersion": "go1.26"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := api.do(tt.method, tt.path, "", nil)
			if r.Status != tt.status || !jsonEqual(r.JSON(t), tt.want) {
				t.Fatalf("%s %s = %d %s, want %d %v", tt.method, tt.path, r.Status, r.Body, tt.status, tt.want)
			}
		})
	}
	failing.Store(true)
	r := api.do(http.MethodGet, "/readyz", "", nil)
	want := map[string]any{"status": "not ready", "checks": map[string]any{"store": "failing", "workers": "ok"}}
	if r.Status != http.StatusServiceUnavailable || !jsonEqual(r.JSON(t), want) {
		t.Fatalf("readyz with a failing check = %d %s", r.Status, r.Body)
	}
	if strings.Contains(string(r.Body), "secret") || !strings.Contains(api.Log.String(), "store closed") {
		t.Fatalf("the check's error must be logged, not answered: body %s", r.Body)
	}
	wantError(t, api.do(http.MethodPost, "/healthz", "", "{}"), http.StatusMethodNotAllowed, CodeMethodNotAllowed, "use GET")
	// Everything else still needs a token.
	wantError(t, api.do(http.MethodGet, apiPrefix+"/clusters", "", nil), http.StatusUnauthorized, CodeUnauthorized)
	wantError(t, api.do(http.MethodGet, "/healthz/x", "", nil), http.StatusUnauthorized, CodeUnauthorized)
}

// TestReadyzAnswersWithinItsBound: a check that ignores its context (a
// store call bounded only by its own request timeout) does not hold
// /readyz past readyCheckTimeout; the checks run side by side, and probes
// arriving while it hangs join the run in flight instead of starting more.
func TestReadyzAnswersWithinItsBound(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	api := newTestAPI(t, func(o *Options) {
		o.Ready = []ReadinessCheck{
			{Name: "store", Check: func(context.Context) error {
				started.Add(1)
				<-release // ignores its context, as a store call may
				return nil
			}},
			{Name: "workers", Check: func(context.Context) error { return nil }},
		}
	})
	defer close(release)
	for range 2 {
		start := time.Now()
		r := api.do(http.MethodGet, "/readyz", "", nil)
		want := map[string]any{"status": "not ready", "checks": map[string]any{"store": "failing", "workers": "ok"}}
		if r.Status != http.StatusServiceUnavailable || !jsonEqual(r.JSON(t), want) {
			t.Fatalf("readyz with a hanging check = %d %s", r.Status, r.Body)
		}
		// Generous: the bound plus a busy machine's scheduling.
		if d := time.Since(start); d > 4*readyCheckTimeout {
			t.Fatalf("readyz took %s with a hanging check; want about %s", d, readyCheckTimeout)
		}
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("the hanging check was started %d times; want 1 (later probes join the run in flight)", n)
	}
	if !strings.Contains(api.Log.String(), "did not answer within") {
		t.Fatalf("the timeout is not logged:\n%s", api.Log.String())
	}
}
