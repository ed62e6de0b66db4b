package validation

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
)

// pathProblem says why p is not an absolute, clean path without ".."
// elements, or returns "" when it is. like is an example of a good value
// for the message.
func pathProblem(p, like string) string {
	switch {
	case p == "":
		return fmt.Sprintf("is required: give an absolute path, like %s", like)
	case !path.IsAbs(p):
		return fmt.Sprintf("%q is not an absolute path; write it from the root, like %s", p, like)
	case slices.Contains(strings.Split(p, "/"), ".."):
		return fmt.Sprintf("%q must not contain \"..\"; write the path without going up, like %s", p, like)
	case path.Clean(p) != p:
		return fmt.Sprintf("%q is not a clean path; write it as %s", p, path.Clean(p))
	}
	return ""
}

// nodePathProblem is pathProblem for a path on a node that zke bind-mounts
// into containers: Docker's bind syntax (source:target:options) leaves no
// room for ':' in it, and white space or control characters in a host path
// are a typo far more often than a real name.
func nodePathProblem(p, like string) string {
	if problem := pathProblem(p, like); problem != "" {
		return problem
	}
	if strings.ContainsRune(p, ':') {
		return fmt.Sprintf("%q contains ':', which zke cannot bind-mount into containers; use a path without it", p)
	}
	if strings.ContainsFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Sprintf("%q contains white space or control characters; use a path without them", p)
	}
	return ""
}
