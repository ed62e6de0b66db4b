package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects within the server a request follows
// (net/http's own default).
const maxRedirects = 10

// errRedirected classifies a redirect the CLI refused to follow: to
// another origin, or one too many.
var errRedirected = errors.New("redirect not followed")

// redirectError is a redirect to another origin (another scheme, host or
// port) that was not followed. Every request carries the context's token
// (a login, the password's digest), which is for the server the context
// names alone; net/http drops the Authorization header only when the host
// changes, and keeps it from https to http, to another port, or to a
// subdomain, so the CLI refuses all of them.
type redirectError struct {
	from, to *url.URL
}

func (e *redirectError) Error() string {
	to := origin(e.to)
	return fmt.Sprintf("the server redirected to %s (from %s); the CLI sends its token to no other scheme, host or port: "+
		"log in to %s directly (singlecloud login --server %s --user NAME)", e.to.Redacted(), origin(e.from), to, to)
}

// Is makes a redirectError match errRedirected.
func (e *redirectError) Is(target error) bool { return target == errRedirected }

// checkRedirect is the CheckRedirect of every HTTP client the CLI makes:
// it follows a redirect only within the origin of the first request.
// Comparing each hop with the first keeps a chain from leaving the
// origin and coming back.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("the server %s redirected %d times; check the --server URL: %w", origin(via[0].URL), len(via), errRedirected)
	}
	if origin(req.URL) != origin(via[0].URL) {
		return &redirectError{from: via[0].URL, to: req.URL}
	}
	return nil
}

// origin is u's scheme, host and port, normalized: compared
// case-insensitively, a default port (80, 443; ws and wss as http and
// https) the same as none.
func origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	switch scheme {
	case "ws":
		scheme = "http"
	case "wss":
		scheme = "https"
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host
}
