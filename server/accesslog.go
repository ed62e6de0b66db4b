package server

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/mux"
)

// unmatchedRouteLabel is the route of a request no route took.
const unmatchedRouteLabel = "unmatched"

// requestInfo is what the inner handlers learn of a request for its
// access log line and metrics: the route template the router matched and
// the authenticated user. handle fills it; the request's goroutine alone
// touches it.
type requestInfo struct {
	// routed: the request reached an API handler (or the router's miss
	// handler), so route is the matched template or empty for a miss.
	routed bool
	route  string
	user   string
}

type requestInfoKey struct{}

// noteRequest records r's route template and user in the request's
// requestInfo, when it has one.
func noteRequest(r *http.Request) {
	info, _ := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if info == nil {
		return
	}
	info.routed = true
	if route := mux.CurrentRoute(r); route != nil {
		if t, err := route.GetPathTemplate(); err == nil {
			info.route = t
		}
	}
	info.user, _ = userFrom(r.Context())
}

// routeFrom is the route template handle noted in ctx, or "".
func routeFrom(ctx context.Context) string {
	if info, _ := ctx.Value(requestInfoKey{}).(*requestInfo); info != nil {
		return info.route
	}
	return ""
}

// accessLog writes one line per request once it is answered — method,
// path without its query (websocket tokens travel there), route template,
// status, duration, bytes written and user — at Info, or at Debug for
// probes and scrapes; and reports the request to Metrics.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
		took := time.Since(start)
		route := s.routeLabel(r, info)
		status := sw.status
		switch {
		case sw.hijacked:
			status = http.StatusSwitchingProtocols
		case status == 0:
			status = http.StatusOK
		}
		s.metrics.RequestDone(route, r.Method, status, took)
		level := slog.LevelInfo
		switch route {
		case healthzPath, readyzPath, metricsPath:
			level = slog.LevelDebug
		}
		s.log.LogAttrs(r.Context(), level, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Duration("duration", took),
			slog.Int64("bytes", sw.bytes),
			slog.String("user", info.user),
		)
	})
}

// routeLabel is the bounded name of r's route: the template the router
// matched; the path itself for the fixed paths answered before the router
// (probes, version, metrics); for a request stopped before the router (no
// or a bad token) the template it would have matched; else "unmatched".
func (s *Server) routeLabel(r *http.Request, info *requestInfo) string {
	if info.route != "" {
		return info.route
	}
	switch r.URL.Path {
	case healthzPath, readyzPath, versionPath, metricsPath:
		return r.URL.Path
	}
	if s.opts.Console != nil && isConsolePath(r.URL.Path) && !info.routed {
		return consoleRouteLabel(r.URL.Path)
	}
	if !info.routed && s.router != nil {
		var match mux.RouteMatch
		if s.router.Match(r, &match) && match.MatchErr == nil && match.Route != nil {
			if t, err := match.Route.GetPathTemplate(); err == nil {
				return t
			}
		}
	}
	return unmatchedRouteLabel
}

// statusWriter notes the status and the bytes of a response, and whether
// its connection was hijacked (a websocket). Unwrap lets
// http.ResponseController reach the connection underneath; Hijack is
// found by it before Unwrap.
type statusWriter struct {
	http.ResponseWriter
	status   int
	bytes    int64
	hijacked bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return conn, rw, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
