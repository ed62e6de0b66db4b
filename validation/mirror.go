package validation

import (
	"net/url"
	"strconv"
	"strings"
)

// maxMirrorLen bounds artifactMirror.
const maxMirrorLen = 1024

// artifactMirrorLike is an example artifactMirror for messages.
const artifactMirrorLike = "http://files.example.com:8080/mirror/"

// ArtifactMirror checks a server-wide mirror address (--artifact-mirror)
// as a cluster's artifactMirror is checked; nil for "".
func ArtifactMirror(mirror string) error {
	var errs collector
	validateArtifactMirror(&errs, mirror)
	return errs.err()
}

// validateArtifactMirror checks the base address release files are
// fetched from, when one is given: an http or https URL with a host and
// an optional path, without a user, query or fragment (the server fetches
// <mirror>/<host>/<path> of each file, and the address is logged).
func validateArtifactMirror(c *collector, mirror string) {
	if mirror == "" {
		return
	}
	const field = "artifactMirror"
	if len(mirror) > maxMirrorLen {
		c.addf(field, "is %d characters long; use at most %d", len(mirror), maxMirrorLen)
		return
	}
	if hasControl(mirror) || strings.ContainsAny(mirror, " \\") {
		c.addf(field, "contains white space, control characters or '\\'; give an address like %s", artifactMirrorLike)
		return
	}
	u, err := url.Parse(mirror)
	switch {
	case err != nil || u.Opaque != "":
		c.addf(field, "%q is not an address; give one like %s", mirror, artifactMirrorLike)
	case u.Scheme != "http" && u.Scheme != "https":
		c.addf(field, "scheme %q is not supported; use http:// or https://, like %s", u.Scheme, artifactMirrorLike)
	case u.User != nil:
		c.addf(field, "must not carry a user or password")
	case u.Host == "" || u.Hostname() == "":
		c.addf(field, "%q has no host; give an address like %s", mirror, artifactMirrorLike)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		c.addf(field, "%q has a query or fragment; give the mirror's base address, like %s", mirror, artifactMirrorLike)
	case strings.Contains(u.Path, "/../") || strings.HasSuffix(u.Path, "/..") || strings.Contains(u.Path, "/./"):
		c.addf(field, "%q: the path must not contain . or .. segments", mirror)
	case u.Port() != "":
		n, err := strconv.Atoi(u.Port())
		if err != nil {
			c.addf(field, "port %q is not a number; use a port between %d and %d", u.Port(), minPort, maxPort)
		} else if p := portProblem(n); p != "" {
			c.addf(field, "port %s", p)
		}
	}
}
