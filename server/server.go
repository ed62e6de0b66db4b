// Package server is singlecloud's HTTP API (SPEC §3): gorilla/mux routes
// under /apis/zcloud.cn/v1 and websockets under /apis/ws.zcloud.cn/v1,
// token authentication, admin and project checks, and singlecloud's
// resource, collection and error envelopes, so that singlecloud's clients
// keep working. Handlers decode, call the cluster manager or the user store
// with the request's context, and encode; every error goes through one
// renderer (writeError).
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server/auth"
)

const (
	// apiPrefix is the base path of every REST resource.
	apiPrefix = "/apis/zcloud.cn/v1"
	// wsPrefix is the base path of every websocket stream.
	wsPrefix = "/apis/ws.zcloud.cn/v1"
)

const (
	// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes
	// is zero: 8 MiB holds the largest cluster config validation accepts
	// (1,000 nodes with labels and taints) or any kubeconfig with room to
	// spare, so that such a body reaches validation and gets its precise
	// answer, while a client still cannot make the server buffer without
	// limit.
	DefaultMaxBodyBytes int64 = 8 << 20
	// DefaultWriteTimeout bounds a request's handler and the writing of its
	// response when Options.WriteTimeout is zero: every REST call is bounded
	// well below it (live reads by the cluster manager's request timeout of
	// 15 s, bcrypt checks by their semaphore), so only a client that stops
	// reading its response meets it, and its connection is then closed
	// instead of holding a goroutine. Websockets clear it after the upgrade
	// and bound each of their writes themselves.
	DefaultWriteTimeout = 60 * time.Second
)

// Options configures a Server. Users, Tokens, Clusters and Bus are
// required.
type Options struct {
	Users    *auth.Users
	Tokens   *auth.Tokens
	Clusters ClusterService
	// Hosts is the host manager; nil serves no /hosts routes.
	Hosts HostService
	// Applications is the application-instance manager; nil serves no
	// /environments routes.
	Applications ApplicationService
	Bus          *pubsub.Bus
	// Logger receives request failures (5xx with their cause); nil
	// discards them.
	Logger *slog.Logger
	// MaxBodyBytes bounds every request body; 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// WriteTimeout is each request's write deadline, from its start; 0
	// means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// Ready lists the checks GET /readyz runs, in order; none means ready
	// as soon as the process serves.
	Ready []ReadinessCheck
	// Version is what GET /apis/zcloud.cn/v1/version answers.
	Version VersionInfo
	// Backup, if set, is served at GET /backup to the admin only (the
	// online backup of the database); nil serves no /backup.
	Backup *Backup
	// LoginLimits throttles password checks (login, resetPassword); the
	// zero value is the defaults.
	LoginLimits LoginLimits
	// StreamLimits bounds the open websocket streams per user, per
	// client address and in all; a zero field is its default
	// (DefaultStreamLimits).
	StreamLimits StreamLimits
	// Alarms ends each stream at its token's expiry; nil means the
	// system clock.
	Alarms Alarms
	// Metrics receives the server's measurements (requests, websocket
	// streams, login failures); nil records none.
	Metrics Metrics
	// MetricsHandler, if set, is served at GET /metrics to the admin
	// only; nil serves no /metrics here (a listener of its own serves it
	// then, or nothing does).
	MetricsHandler http.Handler
	// Leader, if set, returns the advertise URL of the replica that leads
	// ("" while none is known), shown by GET /readyz and /version of a
	// replicated singlecloud; Replica is this replica's.
	Leader  func() string
	Replica string
	// ReplicaSealer, if set, opens the client address a follower seals
	// into a forwarded request (with the key every replica shares), so
	// that logins are throttled by the real client's address.
	ReplicaSealer Sealer
	// Console, if set, serves the web console at GET / and /ui/…,
	// without a token (it reads everything through the API with the
	// user's); nil serves none.
	Console http.Handler
}

// Server is the HTTP API. Serve Handler with an http.Server; after that
// server's Shutdown, call Close to end the websocket streams.
type Server struct {
	opts       Options
	log        *slog.Logger
	handler    http.Handler
	errorRules []errorRule
	upgrader   websocket.Upgrader
	streams    *streams
	clusters   *clusterCache
	// reads answers the reads of clusters: Options.Clusters, or a
	// follower's copy of the store (NewFollower).
	reads ClusterReads
	// hostReads answers the reads of hosts: Options.Hosts, or a
	// follower's copy of the store; nil serves no hosts.
	hostReads HostReads
	// appReads answers the reads of environments and applications:
	// Options.Applications, or a follower's copy; nil serves none.
	appReads ApplicationReads
	logins   *loginThrottle
	metrics  Metrics
	// router matches the requests stopped before it (no token) for the
	// route label of their access log line and metrics; nil if routes
	// is no *mux.Router.
	router *mux.Router
	// forwardedNonces are the forwarded-client headers used recently, so
	// that each is used once; forwardedRefused samples the warnings
	// about refused ones (forwardedclient.go).
	forwardedNonces  *nonceMemory
	forwardedRefused logSample
	// adminCheck, if set, decides whether a request carries the admin's
	// token where the Server has no Users and Tokens of its own (a
	// replica's front).
	adminCheck func(*http.Request) bool
	// ready runs Options.Ready for /readyz.
	ready *readiness
}

// New checks opts, fills defaults and builds the routes.
func New(opts Options) (*Server, error) {
	var missing []error
	if opts.Users == nil {
		missing = append(missing, errors.New("Users is required"))
	}
	if opts.Tokens == nil {
		missing = append(missing, errors.New("Tokens is required"))
	}
	if opts.Clusters == nil {
		missing = append(missing, errors.New("Clusters is required"))
	}
	if opts.Bus == nil {
		missing = append(missing, errors.New("Bus is required"))
	}
	if opts.MaxBodyBytes < 0 {
		missing = append(missing, fmt.Errorf("MaxBodyBytes is %d; give a positive limit, or 0 for the default", opts.MaxBodyBytes))
	}
	if opts.WriteTimeout < 0 {
		missing = append(missing, fmt.Errorf("WriteTimeout is %s; give a positive duration, or 0 for the default", opts.WriteTimeout))
	}
	for i, c := range opts.Ready {
		if c.Name == "" || c.Check == nil {
			missing = append(missing, fmt.Errorf("Ready[%d] needs a Name and a Check", i))
		}
	}
	logins, err := newLoginThrottle(opts.LoginLimits)
	if err != nil {
		missing = append(missing, err)
	}
	if err := opts.StreamLimits.fill(); err != nil {
		missing = append(missing, err)
	}
	if err := errors.Join(missing...); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Alarms == nil {
		opts.Alarms = systemAlarms{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		opts:       opts,
		log:        log,
		errorRules: defaultErrorRules(),
		upgrader:   newUpgrader(),
		streams:    newStreams(opts.StreamLimits, opts.Alarms),
		clusters:   newClusterCache(),
		reads:      opts.Clusters,
		ready:      newReadiness(opts.Ready),
		logins:     logins,
		metrics:    opts.Metrics,
	}
	if opts.ReplicaSealer != nil {
		s.forwardedNonces = newNonceMemory(forwardedNonceTTL, forwardedNonceCap)
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	if opts.Hosts != nil {
		s.hostReads = opts.Hosts
	}
	if opts.Applications != nil {
		s.appReads = opts.Applications
	}
	routes := s.routes()
	s.router, _ = routes.(*mux.Router)
	s.handler = s.accessLog(s.writeDeadline(s.limitBody(s.public(s.serveConsole(s.authenticate(s.serveMetrics(routes)))))))
	return s, nil
}

// Handler returns the API's root handler.
func (s *Server) Handler() http.Handler { return s.handler }

// writeDeadline gives every request, whatever answers it, a write
// deadline of WriteTimeout from its start. Every request sets its own: a
// deadline left by an earlier request on a keep-alive connection would
// otherwise cut a later one. Where the connection cannot take deadlines
// (a test recorder) the request runs without one.
func (s *Server) writeDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
		next.ServeHTTP(w, r)
	})
}

// limitBody caps every request body at MaxBodyBytes; decodeBody turns the
// overflow into a 413 that names the limit.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}
