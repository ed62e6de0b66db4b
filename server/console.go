package server

import (
	"net/http"
	"strings"
)

// The paths of the web console (Options.Console): its page at "/" and its
// static assets under "/ui/". They are answered without a token: the
// console holds no data, and every piece it shows comes from the API with
// the user's token, so a user sees in it exactly what the API lets them
// see.
const (
	consolePath      = "/"
	consoleAssetsDir = "/ui/"
	// consoleAssetsRoute is the route label of every asset.
	consoleAssetsRoute = consoleAssetsDir + "{asset}"
)

// serveConsole answers GET and HEAD of the console's paths with
// Options.Console and passes every other request on (other methods on
// them get the router's 404 or 405, like any path it does not serve).
func (s *Server) serveConsole(next http.Handler) http.Handler {
	if s.opts.Console == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && isConsolePath(r.URL.Path) {
			s.opts.Console.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isConsolePath reports whether path is the console's page or one of its
// assets.
func isConsolePath(path string) bool {
	return path == consolePath || strings.HasPrefix(path, consoleAssetsDir)
}

// consoleRouteLabel is the bounded route label of a console path.
func consoleRouteLabel(path string) string {
	if path == consolePath {
		return consolePath
	}
	return consoleAssetsRoute
}
