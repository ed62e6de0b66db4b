package server

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
)

// metricsPath is where the main listener serves Options.MetricsHandler,
// to the admin only.
const metricsPath = "/metrics"

// Metrics receives the server's measurements. Every string is from a
// bounded set: route templates (never raw paths), methods, stream kinds,
// login failure reasons. metrics.Metrics implements it.
type Metrics interface {
	// RequestDone: a request on route (a route template, a fixed public
	// path, or "unmatched") was answered with status after d; status is
	// 101 for a websocket stream, which has then ended.
	RequestDone(route, method string, status int, d time.Duration)
	// StreamOpened and StreamClosed bracket a websocket stream of kind
	// stream (zkelog, events, applog, ...).
	StreamOpened(stream string)
	StreamClosed(stream string)
	// LoginFailed: a login was refused; reason is bad_credentials or
	// throttled.
	LoginFailed(reason string)
}

// Login failure reasons, as Metrics.LoginFailed reports them.
const (
	loginBadCredentials = "bad_credentials"
	loginThrottled      = "throttled"
)

// noMetrics is the Metrics of Options without one.
type noMetrics struct{}

func (noMetrics) RequestDone(string, string, int, time.Duration) {}
func (noMetrics) StreamOpened(string)                            {}
func (noMetrics) StreamClosed(string)                            {}
func (noMetrics) LoginFailed(string)                             {}

// serveMetrics answers GET /metrics with Options.MetricsHandler, to the
// admin only, and passes every other request on. Without a MetricsHandler
// it passes everything on (and /metrics is not found).
func (s *Server) serveMetrics(next http.Handler) http.Handler {
	if s.opts.MetricsHandler == nil {
		return next
	}
	metrics := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			return &APIError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: "method " + r.Method + " is not allowed on " + metricsPath + "; use GET"}
		}
		if err := requireAdmin(r, "read metrics"); err != nil {
			return err
		}
		s.opts.MetricsHandler.ServeHTTP(w, r)
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == metricsPath {
			metrics.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// countLoginFailure tells Metrics about a login that err refused: a wrong
// user or password, or the throttle's refusal.
func (s *Server) countLoginFailure(err error) {
	var apiErr *APIError
	switch {
	case err == nil:
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusTooManyRequests:
		s.metrics.LoginFailed(loginThrottled)
	case errors.Is(err, auth.ErrBadCredentials):
		s.metrics.LoginFailed(loginBadCredentials)
	}
}

// streamKind is the stream label of a websocket route template: its last
// segment that is not a variable (zkelog, events, live, ...), "applog"
// for an application's log. Templates are a fixed set, so the label's
// values are too.
func streamKind(template string) string {
	segs := strings.Split(strings.Trim(template, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		seg := segs[i]
		if seg == "" || strings.HasPrefix(seg, "{") {
			continue
		}
		if seg == "log" {
			return "applog"
		}
		return seg
	}
	return "other"
}
