package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// principalKey is the context key of the authenticated user.
type principalKey struct{}

// principal is the user a request acts as, and when its token expires.
type principal struct {
	name    string
	admin   bool
	expires time.Time
	// stamp is the token's stamp, which the user's changes as its
	// tokens are revoked (a password change).
	stamp string
}

// authenticate lets a request through only with a valid token for an
// existing user, and puts that user in the request's context. The one
// exception is login, which is how a client gets a token.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLogin(r) {
			next.ServeHTTP(w, r)
			return
		}
		p, err := s.principal(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		// The cluster manager records who started each operation.
		ctx = clustermanager.WithActor(ctx, p.name)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// principal verifies the request's token, that its user still exists and
// that the user's password has not changed since it was issued.
func (s *Server) principal(r *http.Request) (principal, error) {
	token := requestToken(r)
	if token == "" {
		return principal{}, unauthorized("this request needs a token")
	}
	claims, err := s.opts.Tokens.Verify(token)
	switch {
	case errors.Is(err, auth.ErrExpiredToken):
		return principal{}, unauthorized("the token has expired: log in again")
	case err != nil:
		return principal{}, unauthorized("the token is not valid")
	}
	name := claims.User
	u, err := s.opts.Users.Get(name)
	if errors.Is(err, auth.ErrNotFound) {
		return principal{}, unauthorized(fmt.Sprintf("user %s of the token no longer exists", name))
	} else if err != nil {
		return principal{}, fmt.Errorf("authenticate user %s: %w", name, err)
	}
	if u.TokenStamp != claims.Stamp {
		return principal{}, unauthorized(fmt.Sprintf("the token was issued before the password of user %s changed: log in again", name))
	}
	return principal{name: name, admin: s.opts.Users.IsAdmin(name), expires: claims.Expires, stamp: claims.Stamp}, nil
}

// isLogin reports whether r is POST /users/{name}?action=login.
func isLogin(r *http.Request) bool {
	if r.Method != http.MethodPost || r.URL.Query().Get("action") != "login" {
		return false
	}
	name, ok := strings.CutPrefix(r.URL.Path, apiPrefix+"/users/")
	return ok && name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// requestToken finds the token: "Authorization: Bearer <jwt>", or
// singlecloud's bare "Authorization: <jwt>", or, on websocket paths (where
// browsers cannot set headers), "?token=<jwt>".
func requestToken(r *http.Request) string {
	if h := strings.TrimSpace(r.Header.Get("Authorization")); h != "" {
		if scheme, rest, ok := strings.Cut(h, " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(rest)
		}
		return h
	}
	if strings.HasPrefix(r.URL.Path, wsPrefix+"/") {
		return r.URL.Query().Get("token")
	}
	return ""
}

// userFrom returns the authenticated user of a request's context and
// whether it is the admin; the name is empty for the login request.
func userFrom(ctx context.Context) (name string, admin bool) {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p.name, p.admin
}

// requireAdmin fails with 403 unless the request's user is the admin;
// action completes "only admin can …".
func requireAdmin(r *http.Request, action string) error {
	if _, admin := userFrom(r.Context()); !admin {
		return permissionDenied("only admin can " + action)
	}
	return nil
}
