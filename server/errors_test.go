package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/validation"
)

func TestErrorMapping(t *testing.T) {
	api := newTestAPI(t)
	tests := []struct {
		name    string
		err     error
		status  int
		code    string
		message string // "" means the error's text, on one line
	}{
		{"api error as is", &APIError{Status: 418, Code: "Teapot", Message: "short and stout"}, 418, "Teapot", "short and stout"},
		{"wrapped api error", fmt.Errorf("ctx: %w", invalidOption("bad")), 422, CodeInvalidOption, "bad"},
		{"bad credentials", fmt.Errorf("log in as x: %w", auth.ErrBadCredentials), 401, CodeUnauthorized, ""},
		{"invalid token", auth.ErrInvalidToken, 401, CodeUnauthorized, ""},
		{"expired token", auth.ErrExpiredToken, 401, CodeUnauthorized, ""},
		{"permission", auth.ErrPermissionDenied, 403, CodePermissionDenied, ""},
		{"user not found", fmt.Errorf("user x: %w", auth.ErrNotFound), 404, CodeNotFound, ""},
		{"user duplicate", auth.ErrDuplicate, 422, CodeDuplicateResource, ""},
		{"user fields", errors.Join(&auth.FieldError{Field: "name", Message: "bad"}, &auth.FieldError{Field: "password", Message: "bad too"}), 422, CodeInvalidOption, "name: bad; password: bad too"},
		{"cluster config", validation.Errors{{Field: "nodes[0].roles", Reason: "r1"}, {Field: "sshUser", Reason: "r2"}}, 422, CodeInvalidOption, "nodes[0].roles: r1; sshUser: r2"},
		{"refused transition", &fsm.TransitionError{Cluster: "c", Event: fsm.EventCancel, State: fsm.StateRunning}, 409, CodeInvalidState, ""},
		{"cluster not found", fmt.Errorf("cluster c: %w", clustermanager.ErrNotFound), 404, CodeNotFound, ""},
		{"cluster not ready", &clustermanager.NotReadyError{Cluster: "c", Status: fsm.StateConnecting}, 404, CodeNotFound, "cluster c is not ready (status Connecting)"},
		{"cluster duplicate", clustermanager.ErrDuplicate, 422, CodeDuplicateResource, ""},
		{"cluster unreachable", clustermanager.ErrUnreachable, 503, CodeClusterUnavailable, ""},
		{"anything else", errors.New("open /var/lib/secret.key: permission denied"), 500, CodeServerError, "internal server error; the server log has the details"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := httptest.NewServer(api.Server.handle(func(http.ResponseWriter, *http.Request) error { return tt.err }))
			defer hs.Close()
			r := (&testAPI{t: t, URL: hs.URL}).do(http.MethodGet, "/x?token=hidden", "", nil)
			want := tt.message
			if want == "" {
				want = strings.ReplaceAll(tt.err.Error(), "\n", "; ")
			}
			wantError(t, r, tt.status, tt.code)
			if got := r.JSON(t)["message"]; got != want {
				t.Fatalf("message = %q, want %q", got, want)
			}
		})
	}
	// The 500's cause is logged, without the query (which may hold a token).
	logs := api.Log.String()
	if !strings.Contains(logs, "/var/lib/secret.key") || strings.Contains(logs, "hidden") {
		t.Fatalf("server log does not have the 500's cause, or has the query:\n%s", logs)
	}
}

func TestHandleAfterResponseStarted(t *testing.T) {
	api := newTestAPI(t)
	hs := httptest.NewServer(api.Server.handle(func(w http.ResponseWriter, _ *http.Request) error {
		if err := writeResource(w, http.StatusOK, map[string]string{"id": "x"}); err != nil {
			return err
		}
		return errors.New("late failure")
	}))
	defer hs.Close()
	r := (&testAPI{t: t, URL: hs.URL}).do(http.MethodGet, "/", "", nil)
	if r.Status != http.StatusOK || string(r.Body) != "{\"id\":\"x\"}\n" {
		t.Fatalf("response = %d %q, want only the resource", r.Status, r.Body)
	}
	if !strings.Contains(api.Log.String(), "late failure") {
		t.Fatal("late failure not logged")
	}
}

func TestUnknownRoutes(t *testing.T) {
	api := newTestAPI(t)
	admin := api.adminToken()
	wantError(t, api.do(http.MethodGet, apiPrefix+"/nothing", admin, nil), 404, CodeNotFound, apiPrefix+"/nothing")
	wantError(t, api.do(http.MethodGet, "/elsewhere", admin, nil), 404, CodeNotFound, "/elsewhere")
	r := api.do(http.MethodPatch, apiPrefix+"/users/admin", admin, "{}")
	wantError(t, r, 405, CodeMethodNotAllowed, "PATCH", "use GET, POST, PUT, DELETE")
	if allow := r.Header.Get("Allow"); allow != "GET, POST, PUT, DELETE" {
		t.Fatalf("Allow = %q", allow)
	}
	r = api.do(http.MethodDelete, apiPrefix+"/users", admin, nil)
	wantError(t, r, 405, CodeMethodNotAllowed, "use GET, POST")
	// Variables that a route's pattern rejects are a 404, not a 405.
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/a/b/c", admin, nil), 404, CodeNotFound)
}

func TestNewChecksOptions(t *testing.T) {
	_, err := New(Options{MaxBodyBytes: -1})
	if err == nil {
		t.Fatal("New accepted empty options")
	}
	for _, want := range []string{"Users is required", "Tokens is required", "Clusters is required", "Bus is required", "MaxBodyBytes is -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New error %q does not say %q", err, want)
		}
	}
	api := newTestAPI(t)
	if api.Server.opts.MaxBodyBytes != DefaultMaxBodyBytes {
		t.Fatalf("MaxBodyBytes default = %d", api.Server.opts.MaxBodyBytes)
	}
}
