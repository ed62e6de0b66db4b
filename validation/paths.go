package validation

import (
	"fmt"
	"path"
	"slices"
	"strings"
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

// nodePathProblem is pathProblem for a path on a node, which zke writes
// into config files, bind-mounts into containers and passes to shell
// commands: only the characters isNodePathRune allows (so no ':', which
// Docker's bind syntax source:target:options has no room for, no white
// space, quotes, '$' or control characters), at most maxNodePathLen bytes.
func nodePathProblem(p, like string) string {
	if len(p) > maxNodePathLen {
		return fmt.Sprintf("is %d characters long; use a path of at most %d, like %s", len(p), maxNodePathLen, like)
	}
	if problem := pathProblem(p, like); problem != "" {
		return problem
	}
	if strings.ContainsRune(p, ':') {
		return fmt.Sprintf("%q contains ':', which zke cannot bind-mount into containers; use a path without it", p)
	}
	if strings.ContainsFunc(p, func(r rune) bool { return !isNodePathRune(r) }) {
		return fmt.Sprintf("%q may contain only letters, digits and '/', '.', '_', '-', '+', '@' (no white space, quotes, '$' or control characters); use a path like %s", p, like)
	}
	return ""
}

// socketPathProblem is nodePathProblem for a Unix socket, whose path the
// kernel bounds at maxSocketPathLen bytes.
func socketPathProblem(p, like string) string {
	if problem := nodePathProblem(p, like); problem != "" {
		return problem
	}
	if len(p) > maxSocketPathLen {
		return fmt.Sprintf("is %d characters long; a Unix socket path has at most %d, like %s", len(p), maxSocketPathLen, like)
	}
	return ""
}
