package server

import (
	"fmt"
	"net/http"

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
	s.registerEventRoutes(ws)

	root.NotFoundHandler = s.handle(notFound)
	root.MethodNotAllowedHandler = s.handle(methodNotAllowed)
	return root
}

func notFound(_ http.ResponseWriter, r *http.Request) error {
	return &APIError{Status: http.StatusNotFound, Code: CodeNotFound,
		Message: fmt.Sprintf("no resource at %s; the API lives under %s", r.URL.Path, apiPrefix)}
}

func methodNotAllowed(_ http.ResponseWriter, r *http.Request) error {
	return &APIError{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
		Message: fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path)}
}
