package server

import (
	"context"
	"net/http"
	"time"
)

// The paths answered without a token: probes for supervisors and load
// balancers, and the build a client talks to. None of them says anything
// secret: no cluster, user or path appears in their answers, and the
// replicas' addresses in /version only for the admin's token.
const (
	healthzPath = "/healthz"
	readyzPath  = "/readyz"
	versionPath = apiPrefix + "/version"
)

// ReadinessCheck is one condition GET /readyz requires: Check returns nil
// when it holds. Name is shown to anyone; the error is only logged.
type ReadinessCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// VersionInfo is the build the server runs, as GET /version and
// `singlecloud --version` show it.
type VersionInfo struct {
	// Version is the release, set at build time (-ldflags -X); "dev" for
	// a plain go build.
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, with
	// "-dirty" when the tree had local changes; empty when unknown.
	Commit string `json:"commit,omitempty"`
	// BuildDate is the commit's time (RFC 3339), the closest thing to a
	// build date a reproducible build has; empty when unknown.
	BuildDate string `json:"buildDate,omitempty"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion,omitempty"`
}

// healthResponse is the body of /healthz and /readyz.
type healthResponse struct {
	Status string `json:"status"`
	// Checks maps each readiness check's name to "ok" or "failing".
	Checks map[string]string `json:"checks,omitempty"`
	// Leading says whether this replica leads (replicated singlecloud
	// only): enough for a load balancer or a probe to find the leader
	// without being told internal addresses.
	Leading *bool `json:"leading,omitempty"`
	// Leader is the advertise URL of the replica that leads ("none"
	// while none is known), shown to the admin's token only, as on
	// /version.
	Leader string `json:"leader,omitempty"`
}

// versionResource is GET /version, in singlecloud's resource envelope.
type versionResource struct {
	resourceBase
	VersionInfo
	// Leader and Replica are the advertise URLs of the leader ("none"
	// while none is known) and of the replica answering, when replicated,
	// shown to the admin only.
	Leader  string `json:"leader,omitempty"`
	Replica string `json:"replica,omitempty"`
}

// public answers the tokenless paths and passes every other request on.
// Only GET and HEAD are served there; other methods get the usual 405.
func (s *Server) public(next http.Handler) http.Handler {
	healthz := s.handle(s.healthz)
	readyz := s.handle(s.readyz)
	version := s.handle(s.version)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h http.Handler
		switch r.URL.Path {
		case healthzPath:
			h = healthz
		case readyzPath:
			h = readyz
		case versionPath:
			h = version
		default:
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.writeError(w, r, &APIError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: "method " + r.Method + " is not allowed on " + r.URL.Path + "; use GET"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// healthz says the process is alive and serving: it checks nothing else,
// so a supervisor restarts the process only when it truly hangs.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
}

// readyz runs every readiness check (side by side, within
// readyCheckTimeout in all) and answers 200 when all hold, 503
// naming the failing ones otherwise. Failures are logged with their cause.
// A replica says whether it leads; the leader's URL only the admin sees.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	resp := healthResponse{Status: "ready", Checks: map[string]string{}}
	if s.opts.Leader != nil {
		leading := s.opts.Replica != "" && s.opts.Leader() == s.opts.Replica
		resp.Leading = &leading
		if s.isAdmin(r) {
			resp.Leader = s.leader()
		}
	}
	status := http.StatusOK
	for i, err := range s.ready.run(r.Context()) {
		c := s.opts.Ready[i]
		if err != nil {
			s.log.Warn("readiness check failing", "check", c.Name, "error", err)
			resp.Checks[c.Name] = "failing"
			resp.Status, status = "not ready", http.StatusServiceUnavailable
			continue
		}
		resp.Checks[c.Name] = "ok"
	}
	return writeJSON(w, status, resp)
}

// version answers the build the server runs to anyone, and the replicas'
// advertise URLs to the admin only: they are internal addresses (often
// plain HTTP between replicas), of no use to a caller without a token and
// a map of the installation to an attacker.
func (s *Server) version(w http.ResponseWriter, r *http.Request) error {
	base := newResourceBase("version", "version", map[string]string{"self": versionPath}, time.Time{})
	v := versionResource{resourceBase: base, VersionInfo: s.opts.Version}
	if s.opts.Leader != nil && s.isAdmin(r) {
		v.Leader, v.Replica = s.leader(), s.opts.Replica
	}
	return writeResource(w, http.StatusOK, v)
}

// isAdmin reports whether r carries a valid token of the admin, for the
// tokenless paths that show the admin more.
func (s *Server) isAdmin(r *http.Request) bool {
	if s.adminCheck != nil {
		return s.adminCheck(r)
	}
	if s.opts.Tokens == nil || s.opts.Users == nil || requestToken(r) == "" {
		return false
	}
	p, err := s.principal(r)
	return err == nil && p.admin
}

// leader is the leader's advertise URL for /readyz and /version: "" when
// not replicated, "none" while no leader is known.
func (s *Server) leader() string {
	if s.opts.Leader == nil {
		return ""
	}
	if l := s.opts.Leader(); l != "" {
		return l
	}
	return "none"
}
