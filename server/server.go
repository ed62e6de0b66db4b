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

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is
// zero: 1 MiB holds any cluster config or kubeconfig with room to spare,
// and keeps a client from making the server buffer without limit.
const DefaultMaxBodyBytes int64 = 1 << 20

// Options configures a Server. Users, Tokens, Clusters and Bus are
// required.
type Options struct {
	Users    *auth.Users
	Tokens   *auth.Tokens
	Clusters ClusterService
	Bus      *pubsub.Bus
	// Logger receives request failures (5xx with their cause); nil
	// discards them.
	Logger *slog.Logger
	// MaxBodyBytes bounds every request body; 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
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
	if err := errors.Join(missing...); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
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
		streams:    newStreams(),
		clusters:   newClusterCache(),
	}
	s.handler = s.limitBody(s.authenticate(s.routes()))
	return s, nil
}

// Handler returns the API's root handler.
func (s *Server) Handler() http.Handler { return s.handler }

// limitBody caps every request body at MaxBodyBytes; decodeBody turns the
// overflow into a 422 that names the limit.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}
