package server

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/applications"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// ApplicationService is what the API needs of the application-instance
// manager.
type ApplicationService interface {
	ApplicationReads
	CreateEnvironment(ctx context.Context, actor string, env model.Environment) (applications.EnvironmentView, error)
	DeleteEnvironment(ctx context.Context, actor, name string) error
	Apply(ctx context.Context, actor, env, app string, spec model.ApplicationSpec) (applications.Instance, error)
	Uninstall(ctx context.Context, actor, env, app string) (applications.Instance, bool, error)
	Retry(ctx context.Context, actor, env, app string) (applications.Instance, error)
	Status(ctx context.Context, env, app string) (applications.StatusView, error)
	FollowLog(env, app string, since uint64) ([]applications.LogLine, <-chan applications.LogLine, func(), error)
}

// ApplicationReads is the part of ApplicationService that only reads: the
// application manager answers it on the leader, applications.Reads from a
// follower's copy of the store.
type ApplicationReads interface {
	Environments() []applications.EnvironmentView
	Environment(name string) (applications.EnvironmentView, error)
	List(env string) ([]applications.Instance, error)
	Get(env, app string) (applications.Instance, error)
	Log(env, app string, since uint64) ([]applications.LogLine, error)
}

// environmentResource is an environment as the API shows it.
type environmentResource struct {
	resourceBase
	applications.EnvironmentView
}

// applicationResource is an application instance as the API shows it.
type applicationResource struct {
	resourceBase
	applications.Instance
}

// applicationRequest is the body of PUT …/applications/{app}: the spec,
// either bare or as the "spec" of a GET sent back.
type applicationRequest struct {
	echoedFields
	model.ApplicationSpec
	Spec *model.ApplicationSpec `json:"spec,omitempty"`
	// The read fields of a GET sent back are accepted and ignored.
	Environment   any `json:"environment,omitempty"`
	Name          any `json:"name,omitempty"`
	Phase         any `json:"phase,omitempty"`
	Message       any `json:"message,omitempty"`
	SpecHash      any `json:"specHash,omitempty"`
	InstalledHash any `json:"installedHash,omitempty"`
	Generation    any `json:"generation,omitempty"`
	UpdatedBy     any `json:"updatedBy,omitempty"`
	CreatedAt     any `json:"createdAt,omitempty"`
	UpdatedAt     any `json:"updatedAt,omitempty"`
	PhaseSince    any `json:"phaseSince,omitempty"`
	Progress      any `json:"progress,omitempty"`
}

func (s *Server) registerApplicationRoutes(api, ws *mux.Router) {
	if s.opts.Applications == nil {
		return
	}
	ws.Handle("/environments/{env}/applications/{app}/log", s.handle(s.streamApplicationLog)).Methods(http.MethodGet)
	api.Handle("/environments", s.handle(s.listEnvironments)).Methods(http.MethodGet)
	api.Handle("/environments", s.handle(s.createEnvironment)).Methods(http.MethodPost)
	api.Handle("/environments/{env}", s.handle(s.getEnvironment)).Methods(http.MethodGet)
	api.Handle("/environments/{env}", s.handle(s.deleteEnvironment)).Methods(http.MethodDelete)
	api.Handle("/environments/{env}/applications", s.handle(s.listApplications)).Methods(http.MethodGet)
	api.Handle("/environments/{env}/applications/{app}", s.handle(s.getApplication)).Methods(http.MethodGet)
	api.Handle("/environments/{env}/applications/{app}", s.handle(s.applyApplication)).Methods(http.MethodPut)
	api.Handle("/environments/{env}/applications/{app}", s.handle(s.postApplicationAction)).Methods(http.MethodPost)
	api.Handle("/environments/{env}/applications/{app}", s.handle(s.uninstallApplication)).Methods(http.MethodDelete)
	api.Handle("/environments/{env}/applications/{app}/status", s.handle(s.applicationStatus)).Methods(http.MethodGet)
	api.Handle("/environments/{env}/applications/{app}/log", s.handle(s.applicationLog)).Methods(http.MethodGet)
}

func toEnvironmentResource(e applications.EnvironmentView) environmentResource {
	self := apiPrefix + "/environments/" + e.Name
	links := map[string]string{"self": self, "collection": apiPrefix + "/environments", "applications": self + "/applications"}
	if e.Kind == model.EnvironmentHosts {
		links["remove"] = self
	}
	var created time.Time
	if e.CreatedAt != nil {
		created = *e.CreatedAt
	}
	return environmentResource{resourceBase: newResourceBase(e.Name, "environment", links, created), EnvironmentView: e}
}

func toApplicationResource(a applications.Instance) applicationResource {
	coll := apiPrefix + "/environments/" + a.Environment + "/applications"
	self := coll + "/" + a.Name
	links := map[string]string{"self": self, "collection": coll, "update": self, "remove": self, "status": self + "/status", "log": self + "/log"}
	return applicationResource{resourceBase: newResourceBase(a.Name, "application", links, a.CreatedAt), Instance: a}
}

// listEnvironments answers GET /environments (admin): the environments of
// hosts and every ready cluster.
func (s *Server) listEnvironments(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see environments"); err != nil {
		return err
	}
	list := s.appReads.Environments()
	data := make([]any, 0, len(list))
	for _, e := range list {
		data = append(data, toEnvironmentResource(e))
	}
	return writeCollection(w, "environment", apiPrefix+"/environments", data)
}

func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see environments"); err != nil {
		return err
	}
	e, err := s.appReads.Environment(mux.Vars(r)["env"])
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toEnvironmentResource(e))
}

// createEnvironment answers POST /environments (admin): an environment of
// hosts, {"name", "kind": "hosts", "selector"}.
func (s *Server) createEnvironment(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "create environments"); err != nil {
		return err
	}
	var req struct {
		echoedFields
		model.Environment
		Ready     any `json:"ready,omitempty"`
		CreatedBy any `json:"createdBy,omitempty"`
		CreatedAt any `json:"createdAt,omitempty"`
	}
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	actor, _ := userFrom(r.Context())
	e, err := s.opts.Applications.CreateEnvironment(r.Context(), actor, req.Environment)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, toEnvironmentResource(e))
}

func (s *Server) deleteEnvironment(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "delete environments"); err != nil {
		return err
	}
	actor, _ := userFrom(r.Context())
	if err := s.opts.Applications.DeleteEnvironment(r.Context(), actor, mux.Vars(r)["env"]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listApplications(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see applications"); err != nil {
		return err
	}
	env := mux.Vars(r)["env"]
	list, err := s.appReads.List(env)
	if err != nil {
		return err
	}
	data := make([]any, 0, len(list))
	for _, a := range list {
		data = append(data, toApplicationResource(a))
	}
	return writeCollection(w, "application", apiPrefix+"/environments/"+env+"/applications", data)
}

func (s *Server) getApplication(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see applications"); err != nil {
		return err
	}
	v := mux.Vars(r)
	a, err := s.appReads.Get(v["env"], v["app"])
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toApplicationResource(a))
}

// applyApplication answers PUT …/applications/{app} (admin): 202 with the
// instance, Waiting when the spec is new or changed (the same spec again
// changes nothing); follow its phase with GET, its levels with …/status.
func (s *Server) applyApplication(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "apply applications"); err != nil {
		return err
	}
	var req applicationRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	spec := req.ApplicationSpec
	if req.Spec != nil {
		spec = *req.Spec
	}
	actor, _ := userFrom(r.Context())
	v := mux.Vars(r)
	a, err := s.opts.Applications.Apply(r.Context(), actor, v["env"], v["app"], spec)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, toApplicationResource(a))
}

// uninstallApplication answers DELETE …/applications/{app} (admin): 202
// while it is uninstalled; an Uninstalled instance is forgotten (204).
func (s *Server) uninstallApplication(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "uninstall applications"); err != nil {
		return err
	}
	actor, _ := userFrom(r.Context())
	v := mux.Vars(r)
	a, purged, err := s.opts.Applications.Uninstall(r.Context(), actor, v["env"], v["app"])
	if err != nil {
		return err
	}
	if purged {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return writeJSON(w, http.StatusAccepted, toApplicationResource(a))
}

// postApplicationAction runs ?action=retry (admin): a Failed instance is
// installed again.
func (s *Server) postApplicationAction(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "retry applications"); err != nil {
		return err
	}
	switch action := r.URL.Query().Get("action"); action {
	case "retry":
		actor, _ := userFrom(r.Context())
		v := mux.Vars(r)
		a, err := s.opts.Applications.Retry(r.Context(), actor, v["env"], v["app"])
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusAccepted, toApplicationResource(a))
	default:
		return unknownAction(action)
	}
}

// applicationStatus answers GET …/{app}/status (admin): seed 001's
// ApplicationStatusResponse (health levels 0–100 overall, per version, per
// node) with the instance's phase.
func (s *Server) applicationStatus(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see applications"); err != nil {
		return err
	}
	v := mux.Vars(r)
	st, err := s.opts.Applications.Status(r.Context(), v["env"], v["app"])
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, st)
}

// applicationLog answers GET …/{app}/log?since=N (admin): the instance's
// log lines after N, oldest first.
func (s *Server) applicationLog(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see applications"); err != nil {
		return err
	}
	since, err := logSince(r)
	if err != nil {
		return err
	}
	v := mux.Vars(r)
	lines, err := s.appReads.Log(v["env"], v["app"], since)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"lines": lines})
}
