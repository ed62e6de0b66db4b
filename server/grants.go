package server

import (
	"fmt"
	"net/http"
)

// grants is what one user may read: everything for an admin, otherwise
// the clusters named in the user's projects.
type grants struct {
	admin    bool
	clusters map[string]bool
}

func (g grants) allows(cluster string) bool { return g.admin || g.clusters[cluster] }

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
	g := grants{clusters: map[string]bool{}}
	for _, p := range u.Projects {
		g.clusters[p.Cluster] = true
	}
	return g, nil
}

// requireGrant fails with 403 unless the user may read cluster. A user
// without a grant learns nothing about whether the cluster exists.
func (s *Server) requireGrant(r *http.Request, cluster string) error {
	g, err := s.grants(r)
	if err != nil {
		return err
	}
	if !g.allows(cluster) {
		return &APIError{Status: http.StatusForbidden, Code: CodePermissionDenied, Message: "user has no access to cluster " + cluster + "; ask an administrator to grant it in your projects"}
	}
	return nil
}
