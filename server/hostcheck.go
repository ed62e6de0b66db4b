package server

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// HostChecker runs a create's checks against a registered host
// (clustermanager.Manager.CheckHost).
type HostChecker interface {
	CheckHost(ctx context.Context, name string, roles []model.Role) (clustermanager.HostCheck, error)
}

// hostCheckRequest is the optional body of POST /hosts/{host}?action=check.
type hostCheckRequest struct {
	// Roles are the roles to check the host for; none: every role.
	Roles []model.Role `json:"roles,omitempty"`
}

// checkHost answers POST /hosts/{host}?action=check (admin): what a create
// would check on the host before changing anything (SSH, Docker, the
// runtimes, OS, memory, disk, clock, ports…), with each problem and what
// to do; nothing on the host changes. A host that fails a check is a 200
// with ok false: the check itself worked.
func (s *Server) checkHost(w http.ResponseWriter, r *http.Request) error {
	checker, ok := s.opts.Clusters.(HostChecker)
	if !ok {
		return &APIError{Status: http.StatusNotImplemented, Code: CodeServerError,
			Message: "this singlecloud has no installer to check hosts with"}
	}
	var req hostCheckRequest
	if r.ContentLength != 0 {
		if err := s.decodeBody(r, &req); err != nil {
			return err
		}
	}
	res, err := checker.CheckHost(r.Context(), mux.Vars(r)["host"], req.Roles)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, res)
}
