package server

import (
	"fmt"
	"net/http"
)

// grants is what one user may read: everything for an admin, otherwise
// the clusters named in the user's projects, and of each the namespaces
// they name (every one for a project whose namespace is empty,
// "_all_namespaces" or "_all").
type grants struct {
	admin    bool
	clusters map[string]*namespaceGrant
}

// namespaceGrant is the namespaces of one cluster a user may read.
type namespaceGrant struct {
	all   bool
	names map[string]bool
}

func (g grants) allows(cluster string) bool { return g.admin || g.clusters[cluster] != nil }

// allowsNamespace reports whether the user may see namespace ns of
// cluster.
func (g grants) allowsNamespace(cluster, ns string) bool {
	if g.admin {
		return true
	}
	n := g.clusters[cluster]
	return n != nil && (n.all || n.names[ns])
}

// grants looks up the requesting user's read grants.
func (s *Server) grants(r *http.Request) (grants, error) {
	name, admin := userFrom(r.Context())
	if admin {
		return grants{admin: true}, nil
	}
	u, err := s.opts.Users.Get(name)
	if err != nil {
		return grants{}, fmt.Errorf("look up grants of user %s: %w", name, err)
	}
	g := grants{clusters: map[string]*namespaceGrant{}}
	for _, p := range u.Projects {
		n := g.clusters[p.Cluster]
		if n == nil {
			n = &namespaceGrant{names: map[string]bool{}}
			g.clusters[p.Cluster] = n
		}
		if p.AllNamespaces() {
			n.all = true
		} else {
			n.names[p.Namespace] = true
		}
	}
	return g, nil
}

// requireGrant fails with 403 unless the user may read cluster. A user without a grant learns nothing about
// whether the cluster exists.
func (s *Server) requireGrant(r *http.Request, cluster string) error {
	_, err := s.requireGrants(r, cluster)
	return err
}

// requireGrants is requireGrant returning the grants, for handlers that
// filter by namespace.
func (s *Server) requireGrants(r *http.Request, cluster string) (grants, error) {
	g, err := s.grants(r)
	if err != nil {
		return grants{}, err
	}
	if !g.allows(cluster) {
		return grants{}, &APIError{Status: http.StatusForbidden, Code: CodePermissionDenied, Message: "user has no access to cluster " + cluster + "; ask an administrator to grant it in your projects"}
	}
	return g, nil
}
