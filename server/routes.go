package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// routes builds the router: each resource file registers its own routes on
// the REST (api) and websocket (ws) sub-routers. Unknown paths and methods
// get the error envelope too.
func (s *Server) routes() http.Handler {
	root := mux.NewRouter()
	api := root.PathPrefix(apiPrefix).Subrouter()
	ws := root.PathPrefix(wsPrefix).Subrouter()

	s.registerUserRoutes(api)
	s.registerClusterRoutes(api, ws)
	s.registerHostRoutes(api, ws)
	s.registerApplicationRoutes(api, ws)
	s.registerEventRoutes(ws)
	s.registerBackupRoutes(api)

	// gorilla/mux v1.8.1 reports a method mismatch inside a sub-router as
	// a plain miss (gorilla/mux#751), so the miss handler tells the two
	// apart itself.
	unmatched := s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return unmatchedRoute(root, w, r)
	})
	root.NotFoundHandler = unmatched
	root.MethodNotAllowedHandler = unmatched
	return root
}

// unmatchedRoute answers 405 with an Allow header when r's path has routes
// for other methods, else 404. It runs only for requests no route took.
func unmatchedRoute(root *mux.Router, w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	// The methods the API's routes use.
	for _, m := range [...]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if root.Match(probe, &match) && match.MatchErr == nil {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return &APIError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: fmt.Sprintf("method %s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allowed, ", "))}
	}
	return &APIError{Status: http.StatusNotFound, Code: CodeNotFound,
		Message: fmt.Sprintf("no resource at %s; the API lives under %s", r.URL.Path, apiPrefix)}
}
