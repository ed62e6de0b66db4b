package server

import (
	"log/slog"
	"net/http"
	"sync/atomic"
)

// startingMessage is what a request gets while the process starts.
const startingMessage = "starting up: retry in a few seconds"

// StartupOptions configures NewStartup.
type StartupOptions struct {
	// Logger receives the refusals (at debug); nil discards them.
	Logger *slog.Logger
}

// Startup is the handler a process serves from the moment it listens:
// until Ready hands it the API, it answers GET /healthz (alive), /readyz
// (503, "starting") and nothing else: every other request gets 503
// NoLeader with Retry-After and "starting up: retry in a few seconds".
// So no request is served with the state of before a restart (an admin
// password that --admin-password replaces, clusters not loaded yet),
// while a supervisor's liveness probe is answered through a long load
// instead of timing out on a connection nobody accepts; clients (the CLI
// included) retry a NoLeader answer as they do during a failover.
type Startup struct {
	s    *Server
	next atomic.Pointer[http.Handler]
}

// NewStartup returns a Startup that is not ready.
func NewStartup(opts StartupOptions) *Startup {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Startup{s: &Server{log: log, errorRules: defaultErrorRules(), metrics: noMetrics{}}}
}

// Ready makes every request from now on go to h.
func (st *Startup) Ready(h http.Handler) { st.next.Store(&h) }

func (st *Startup) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := st.next.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case get && r.URL.Path == healthzPath:
		_ = writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
	case get && r.URL.Path == readyzPath:
		_ = writeJSON(w, http.StatusServiceUnavailable, healthResponse{Status: "starting"})
	default:
		w.Header().Set("Retry-After", retryAfterNoLeader)
		st.s.writeError(w, r, &APIError{Status: http.StatusServiceUnavailable, Code: CodeNoLeader, Message: startingMessage})
	}
}
