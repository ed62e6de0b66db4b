package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// ServedByHeader names the replica that answered a read itself from its
// copy of the store; a read the leader answered does not carry it.
const ServedByHeader = "X-Singlecloud-Served-By"

// FollowerOptions configures NewFollower. Users, Tokens and Clusters are
// required; each reads the follower's copy of the store.
type FollowerOptions struct {
	Users    *auth.Users
	Tokens   *auth.Tokens
	Clusters ClusterReads
	// Hosts, if set, answers the reads of hosts; Applications those of
	// environments and applications.
	Hosts        HostReads
	Applications ApplicationReads
	// Bus carries the leader's events relayed to this replica
	// (eventrelay), for the events websocket.
	Bus *pubsub.Bus
	// Self is the replica's advertise URL, sent in ServedByHeader.
	Self string
	// Logger receives request failures and the access log; nil discards
	// them.
	Logger *slog.Logger
	// Metrics receives the measurements of the requests served here; nil
	// records none.
	Metrics Metrics
}

// Follower is the part of the API a replica that does not lead answers
// itself, from its own copy of the store (issue 12): the lists and reads
// of clusters, their operation history, certificates and kubeconfigs,
// users, hosts and the commands run on them, environments, application
// instances and their stored logs; the installer log websocket, from the stored frames; and the
// events websocket, from the leader's events relayed through etcd. Every other request goes to the leader. The answers are the
// leader's handlers run on the follower's reads, with the same token
// checks, grants and envelopes.
type Follower struct {
	s      *Server
	router *mux.Router
}

// NewFollower builds the follower's API.
func NewFollower(opts FollowerOptions) (*Follower, error) {
	if opts.Users == nil || opts.Tokens == nil || opts.Clusters == nil || opts.Bus == nil {
		return nil, errors.New("new follower: Users, Tokens, Clusters and Bus are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var limits StreamLimits
	_ = limits.fill() // the zero value is never refused
	s := &Server{
		opts: Options{Users: opts.Users, Tokens: opts.Tokens, Bus: opts.Bus, Logger: log, Replica: opts.Self,
			WriteTimeout: DefaultWriteTimeout, MaxBodyBytes: DefaultMaxBodyBytes},
		log:        log,
		errorRules: defaultErrorRules(),
		upgrader:   newUpgrader(),
		streams:    newStreams(limits, systemAlarms{}),
		clusters:   newClusterCache(),
		reads:      opts.Clusters,
		metrics:    opts.Metrics,
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	root := mux.NewRouter()
	api := root.PathPrefix(apiPrefix).Subrouter()
	type route struct {
		path string
		h    func(http.ResponseWriter, *http.Request) error
	}
	// In the leader's order: a fixed path before a variable one it
	// also matches (/hosts/commands before /hosts/{host}).
	routes := []route{
		{"/clusters", s.listClusters},
		{"/clusters/{cluster}", s.getCluster},
		{"/clusters/{cluster}/operations", s.listOperations},
		{"/clusters/{cluster}/certificates", s.listClusterCertificates},
		{"/certificates", s.listFleetCertificates},
		{"/clusters/{cluster}/kubeconfigs", s.listKubeconfigs},
		{"/clusters/{cluster}/kubeconfigs/{user}", s.getKubeconfig},
		{"/users", s.listUsers},
		{"/users/{user}", s.getUser},
	}
	if opts.Hosts != nil {
		s.hostReads = opts.Hosts
		routes = append(routes, route{"/hosts", s.listHosts}, route{"/hosts/commands", s.listHostCommands},
			route{"/hosts/commands/{id}", s.getHostCommand}, route{"/hosts/{host}", s.getHost})
	}
	if opts.Applications != nil {
		s.appReads = opts.Applications
		routes = append(routes, route{"/environments", s.listEnvironments}, route{"/environments/{env}", s.getEnvironment},
			route{"/environments/{env}/applications", s.listApplications},
			route{"/environments/{env}/applications/{app}", s.getApplication},
			route{"/environments/{env}/applications/{app}/log", s.applicationLog})
	}
	for _, rt := range routes {
		api.Handle(rt.path, s.handle(rt.h)).Methods(http.MethodGet).MatcherFunc(notWatch)
	}
	ws := root.PathPrefix(wsPrefix).Subrouter()
	s.registerEventRoutes(ws)
	s.registerZkelogRoutes(ws)
	s.router = root
	authenticated := s.authenticate(root)
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ServedByHeader, opts.Self)
		authenticated.ServeHTTP(w, r)
	})
	s.handler = s.accessLog(s.writeDeadline(served))
	return &Follower{s: s, router: root}, nil
}

// Serves reports whether the follower answers r itself: a GET of one of
// its routes.
func (f *Follower) Serves(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	var match mux.RouteMatch
	return f.router.Match(r, &match) && match.MatchErr == nil
}

// TokenValid reports whether r carries a token this installation signed
// and that has not expired (whether its user still exists is checked as
// the request is served): a request without one is refused at once,
// costing etcd nothing.
func (f *Follower) TokenValid(r *http.Request) bool {
	token := requestToken(r)
	if token == "" {
		return false
	}
	_, err := f.s.opts.Tokens.Verify(token)
	return err == nil
}

// Handler returns the follower's API; it answers only what Serves
// accepts.
func (f *Follower) Handler() http.Handler { return f.s.handler }

// Revalidate ends the follower's streams whose user was deleted or whose
// password changed since the stream's token was issued: the leader
// serves those changes, and the follower learns of them only through its
// copy of the store. Call it when the copy changes.
func (f *Follower) Revalidate() {
	f.s.streams.revalidate(func(name string) (string, bool, error) {
		u, err := f.s.opts.Users.Get(name)
		switch {
		case errors.Is(err, auth.ErrNotFound):
			return "", false, nil
		case err != nil:
			return "", false, err
		}
		return u.TokenStamp, true, nil
	})
}

// Close ends the follower's websocket streams; call it after the HTTP
// server serving Handler has shut down.
func (f *Follower) Close() { f.s.Close() }

// followerSyncTimeout bounds how long a follower waits for its copy of
// the store to catch up before a read; past it the read goes to the
// leader instead.
const followerSyncTimeout = 2 * time.Second

// notWatch refuses ?watch=true: GET /hosts/commands/{id}?watch=true
// follows a running command's output, which only the leader has.
func notWatch(r *http.Request, _ *mux.RouteMatch) bool { return r.URL.Query().Get("watch") != "true" }

// errBehind says why a follower sent a read on to the leader.
func errBehind(err error) error {
	return fmt.Errorf("this replica's copy of the store is behind (%w): the read goes to the leader", err)
}
