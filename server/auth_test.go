package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
)

func TestTokenRequired(t *testing.T) {
	api := newTestAPI(t)
	admin := api.adminToken()
	gone := api.createUser("gone", "pw")
	if err := api.Users.Delete("gone"); err != nil {
		t.Fatal(err)
	}
	foreign, err := auth.NewTokens(newTestAPI(t).DB, nil)
	if err != nil {
		t.Fatal(err)
	}
	foreignToken, _ := foreign.Issue("admin", "")
	users := apiPrefix + "/users"
	wsMissing := wsPrefix + "/no-such-stream"

	tests := []struct {
		name   string
		path   string
		header string // Authorization value; "" for none
		status int
		want   string // fragment of the 401 message
	}{
		{"no token", users, "", 401, "needs a token"},
		{"garbage bearer", users, "Bearer garbage", 401, "not valid"},
		{"token of another install", users, "Bearer " + foreignToken, 401, "not valid"},
		{"basic auth", users, "Basic YWRtaW46YWRtaW4=", 401, "not valid"},
		{"deleted user", users, "Bearer " + gone, 401, "user gone of the token no longer exists"},
		{"query token on a REST path", users + "?token=" + admin, "", 401, "needs a token"},
		{"bearer", users, "Bearer " + admin, 200, ""},
		{"lower-case bearer", users, "bearer " + admin, 200, ""},
		{"singlecloud's bare token", users, admin, 200, ""},
		// Past authentication, an unknown stream is a 404.
		{"query token on a websocket path", wsMissing + "?token=" + admin, "", 404, ""},
		{"no token on a websocket path", wsMissing, "", 401, "needs a token"},
		{"unknown REST path without token", apiPrefix + "/nothing", "", 401, "needs a token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, api.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			r := api.send(req)
			switch tt.status {
			case 401:
				wantError(t, r, 401, CodeUnauthorized, tt.want, "action=login")
			case 404:
				wantError(t, r, 404, CodeNotFound)
			default:
				if r.Status != tt.status {
					t.Fatalf("status = %d, want %d: %s", r.Status, tt.status, r.Body)
				}
			}
		})
	}
}

func TestExpiredToken(t *testing.T) {
	api := newTestAPI(t)
	token := api.adminToken()
	api.Clock.Add(auth.TokenLifetime - time.Minute)
	if r := api.do(http.MethodGet, apiPrefix+"/users", token, nil); r.Status != http.StatusOK {
		t.Fatalf("token refused before expiry: %d %s", r.Status, r.Body)
	}
	api.Clock.Add(2 * time.Minute)
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users", token, nil), 401, CodeUnauthorized, "expired", "action=login")
	// Logging in again gives a working token.
	if r := api.do(http.MethodGet, apiPrefix+"/users", api.adminToken(), nil); r.Status != http.StatusOK {
		t.Fatalf("fresh token refused: %d %s", r.Status, r.Body)
	}
}

func TestLoginNeedsNoToken(t *testing.T) {
	api := newTestAPI(t)
	// Only POST ...?action=login is open; the same path with another
	// method or action is not.
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/admin?action=login", "", nil), 401, CodeUnauthorized)
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users/admin?action=resetPassword", "", "{}"), 401, CodeUnauthorized)
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users?action=login", "", "{}"), 401, CodeUnauthorized)
	wantError(t, api.do(http.MethodPost, apiPrefix+"/clusters/x?action=login", "", "{}"), 401, CodeUnauthorized)
}

func TestIsLogin(t *testing.T) {
	tests := []struct {
		method, target string
		want           bool
	}{
		{"POST", apiPrefix + "/users/admin?action=login", true},
		{"POST", apiPrefix + "/users/admin?action=login&x=1", true},
		{"POST", apiPrefix + "/users/admin", false},
		{"GET", apiPrefix + "/users/admin?action=login", false},
		{"POST", apiPrefix + "/users/?action=login", false},
		{"POST", apiPrefix + "/users/a/b?action=login", false},
		{"POST", apiPrefix + "/users/..?action=login", false},
		{"POST", wsPrefix + "/users/admin?action=login", false},
	}
	for _, tt := range tests {
		r, err := http.NewRequest(tt.method, "http://x"+tt.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := isLogin(r); got != tt.want {
			t.Errorf("isLogin(%s %s) = %v, want %v", tt.method, tt.target, got, tt.want)
		}
	}
}

func TestRequireAdmin(t *testing.T) {
	r, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	if err := requireAdmin(r, "do it"); err == nil {
		t.Fatal("anonymous request passed requireAdmin")
	}
	bob := r.WithContext(context.WithValue(r.Context(), principalKey{}, principal{name: "bob"}))
	err := requireAdmin(bob, "do it")
	if apiErr, ok := err.(*APIError); !ok || apiErr.Status != 403 || apiErr.Code != CodePermissionDenied || apiErr.Message != "only admin can do it" {
		t.Fatalf("requireAdmin(bob) = %#v", err)
	}
	admin := r.WithContext(context.WithValue(r.Context(), principalKey{}, principal{name: "admin", admin: true}))
	if err := requireAdmin(admin, "do it"); err != nil {
		t.Fatalf("requireAdmin(admin) = %v", err)
	}
	if name, isAdmin := userFrom(admin.Context()); name != "admin" || !isAdmin {
		t.Fatalf("userFrom = %q, %v", name, isAdmin)
	}
}
