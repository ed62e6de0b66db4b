package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/zdnscloud/singlecloud/applications"
	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/validation"
)

// Error codes, spelled as singlecloud's clients expect them.
const (
	CodeUnauthorized       = "Unauthorized"
	CodePermissionDenied   = "PermissionDenied"
	CodeNotFound           = "NotFound"
	CodeMethodNotAllowed   = "MethodNotAllow" // sic: singlecloud's spelling
	CodeInvalidState       = "InvalidState"
	CodeInvalidBodyContent = "InvalidBodyContent"
	CodeBodyTooLarge       = "RequestEntityTooLarge"
	CodeRequestTimeout     = "RequestTimeout"
	CodeInvalidOption      = "InvalidOption"
	CodeInvalidAction      = "InvalidAction"
	CodeDuplicateResource  = "DuplicateResource"
	CodeClusterUnavailable = "ClusterUnavailable"
	CodeServerError        = "ServerError"
)

// APIError is an error the client is meant to read: it is rendered as is,
// with Status as the HTTP status.
type APIError struct {
	Status  int
	Code    string
	Message string
}

// Error renders the error as "Code: Message" for logs and wrapping.
func (e *APIError) Error() string { return e.Code + ": " + e.Message }

// unauthorized is a 401 that says how to get a token.
func unauthorized(problem string) *APIError {
	return &APIError{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
		Message: problem + "; log in with POST " + apiPrefix + "/users/<name>?action=login and send the token as \"Authorization: Bearer <token>\""}
}

// permissionDenied is a 403.
func permissionDenied(msg string) *APIError {
	return &APIError{Status: http.StatusForbidden, Code: CodePermissionDenied, Message: msg}
}

// invalidOption is a 422 for a request that is well-formed JSON but asks
// for something not allowed.
func invalidOption(msg string) *APIError {
	return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidOption, Message: msg}
}

// unknownAction is the 422 InvalidAction for an ?action= a resource does
// not have.
func unknownAction(action string) *APIError {
	if action == "" {
		return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidAction, Message: "this request needs an ?action= parameter"}
	}
	return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidAction, Message: fmt.Sprintf("action %q is not supported on this resource", action)}
}

// errorRule maps every error matching target (errors.Is) to a status and
// code; the client sees the error's own text, which names what it
// concerns.
type errorRule struct {
	target error
	status int
	code   string
}

// defaultErrorRules is the classification of the packages the API calls.
// Add a row to map a new sentinel; the first matching row wins.
func defaultErrorRules() []errorRule {
	return []errorRule{
		{auth.ErrBadCredentials, http.StatusUnauthorized, CodeUnauthorized},
		{auth.ErrInvalidToken, http.StatusUnauthorized, CodeUnauthorized},
		{auth.ErrExpiredToken, http.StatusUnauthorized, CodeUnauthorized},
		{auth.ErrPermissionDenied, http.StatusForbidden, CodePermissionDenied},
		{auth.ErrNotFound, http.StatusNotFound, CodeNotFound},
		{auth.ErrDuplicate, http.StatusUnprocessableEntity, CodeDuplicateResource},
		{auth.ErrInvalid, http.StatusUnprocessableEntity, CodeInvalidOption},
		{auth.ErrConflict, http.StatusConflict, CodeInvalidState},
		{validation.ErrInvalid, http.StatusUnprocessableEntity, CodeInvalidOption},
		{fsm.ErrInvalidTransition, http.StatusConflict, CodeInvalidState},
		{clustermanager.ErrNotFound, http.StatusNotFound, CodeNotFound},
		{hosts.ErrNotFound, http.StatusNotFound, CodeNotFound},
		{hosts.ErrCommandNotFound, http.StatusNotFound, CodeNotFound},
		{hosts.ErrInUse, http.StatusConflict, CodeInvalidState},
		{hosts.ErrDuplicate, http.StatusUnprocessableEntity, CodeDuplicateResource},
		{applications.ErrNotFound, http.StatusNotFound, CodeNotFound},
		{applications.ErrConflict, http.StatusConflict, CodeInvalidState},
		{applications.ErrDuplicate, http.StatusUnprocessableEntity, CodeDuplicateResource},
		{applications.ErrUnavailable, http.StatusServiceUnavailable, CodeClusterUnavailable},
		{clustermanager.ErrNotReady, http.StatusNotFound, CodeNotFound},
		{clustermanager.ErrDuplicate, http.StatusUnprocessableEntity, CodeDuplicateResource},
		{clustermanager.ErrUnreachable, http.StatusServiceUnavailable, CodeClusterUnavailable},
		{clustermanager.ErrBusy, http.StatusConflict, CodeInvalidState},
		{clustermanager.ErrNotSnapshottable, http.StatusUnprocessableEntity, CodeInvalidAction},
		{clustermanager.ErrNoSnapshots, http.StatusUnprocessableEntity, CodeInvalidAction},
		{clustermanager.ErrSnapshotFailed, http.StatusServiceUnavailable, CodeClusterUnavailable},
		{snapshots.ErrHeld, http.StatusConflict, CodeInvalidState},
		{snapshots.ErrCorrupt, http.StatusInternalServerError, CodeServerError},
		{snapshots.ErrNotFound, http.StatusNotFound, CodeNotFound},
		{snapshots.ErrInvalidID, http.StatusNotFound, CodeNotFound},
		{storage.ErrNotLeader, http.StatusServiceUnavailable, CodeNoLeader},
	}
}

// toAPIError classifies err. Anything unclassified is a 500 whose message
// says nothing about the cause (which may name internals); the cause is
// logged instead.
func (s *Server) toAPIError(err error) *APIError {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	for _, rule := range s.errorRules {
		if errors.Is(err, rule.target) {
			return &APIError{Status: rule.status, Code: rule.code, Message: oneLine(err.Error())}
		}
	}
	return &APIError{Status: http.StatusInternalServerError, Code: CodeServerError,
		Message: "internal server error; the server log has the details"}
}

// writeError renders err as singlecloud's error envelope. Server errors
// are logged with their cause; the request's query is never logged, as it
// may carry a token.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	apiErr := s.toAPIError(err)
	switch {
	case apiErr.Status >= http.StatusInternalServerError && errors.Is(r.Context().Err(), context.Canceled):
		s.log.Debug("request canceled by the client", "method", r.Method, "path", r.URL.Path, "error", err)
	case apiErr.Status >= http.StatusInternalServerError:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "status", apiErr.Status, "error", err)
	default:
		s.log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "status", apiErr.Status, "code", apiErr.Code)
	}
	body := errorBody{Code: apiErr.Code, Status: apiErr.Status, Type: "error", Message: apiErr.Message}
	if apiErr.Status < http.StatusInternalServerError {
		body.Fields = fieldProblems(err)
	}
	if err := writeJSON(w, apiErr.Status, body); err != nil {
		s.log.Debug("write error response", "method", r.Method, "path", r.URL.Path, "error", err)
	}
}

// oneLine joins the lines of a multi-error (errors.Join) with "; ".
func oneLine(msg string) string {
	return strings.ReplaceAll(msg, "\n", "; ")
}
