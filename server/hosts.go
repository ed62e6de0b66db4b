package server

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// HostService is what the API needs of the host manager.
type HostService interface {
	HostReads
	Create(ctx context.Context, spec model.HostSpec) (hosts.Host, error)
	Update(ctx context.Context, name string, spec model.HostSpec) (hosts.Host, error)
	Delete(ctx context.Context, name string) error
	ForgetHostKey(ctx context.Context, name string) (hosts.Host, error)
	RunCommand(ctx context.Context, actor, name, selector string, req hosts.CommandRequest) (hosts.CommandRecord, error)
	FollowCommand(id string) (hosts.CommandRecord, <-chan hosts.CommandChunk, func(), error)
}

// HostReads is the part of HostService that only reads: the host manager
// answers it on the leader, hosts.Reads from a follower's copy of the
// store.
type HostReads interface {
	List() []hosts.Host
	Get(name string) (hosts.Host, error)
	Command(id string) (hosts.CommandRecord, error)
	Commands() ([]hosts.CommandRecord, error)
}

// hostResource is a registered host as the API shows it: never its key.
type hostResource struct {
	resourceBase
	hosts.Host
}

// hostRequest is the body of POST /hosts and PUT /hosts/{host}; the read
// fields of a GET sent back are accepted and ignored.
type hostRequest struct {
	echoedFields
	model.HostSpec
	HostKey     any `json:"hostKey,omitempty"`
	CreatedAt   any `json:"createdAt,omitempty"`
	Status      any `json:"status,omitempty"`
	Reason      any `json:"reason,omitempty"`
	Hint        any `json:"hint,omitempty"`
	StatusSince any `json:"statusSince,omitempty"`
	LastProbe   any `json:"lastProbe,omitempty"`
	System      any `json:"system,omitempty"`
}

func (s *Server) registerHostRoutes(api, ws *mux.Router) {
	if s.opts.Hosts == nil {
		return
	}
	ws.Handle("/hosts/commands/{id}", s.handle(s.streamHostCommand)).Methods(http.MethodGet)
	api.Handle("/hosts", s.handle(s.listHosts)).Methods(http.MethodGet)
	api.Handle("/hosts", s.handle(s.createHost)).Methods(http.MethodPost)
	// Before /hosts/{host}: "commands" is no host's name.
	api.Handle("/hosts/commands", s.handle(s.listHostCommands)).Methods(http.MethodGet)
	api.Handle("/hosts/commands", s.handle(s.runHostCommand)).Methods(http.MethodPost)
	// Before the plain GET: ?watch=true upgrades to the same websocket
	// as under the websocket prefix, for clients that follow the REST
	// path with the token in the Authorization header (hoststream.go).
	api.Handle("/hosts/commands/{id}", s.handle(s.streamHostCommand)).Methods(http.MethodGet).Queries("watch", "true")
	api.Handle("/hosts/commands/{id}", s.handle(s.getHostCommand)).Methods(http.MethodGet)
	api.Handle("/hosts/{host}/commands", s.handle(s.runHostCommand)).Methods(http.MethodPost)
	api.Handle("/hosts/{host}", s.handle(s.getHost)).Methods(http.MethodGet)
	api.Handle("/hosts/{host}", s.handle(s.updateHost)).Methods(http.MethodPut)
	api.Handle("/hosts/{host}", s.handle(s.postHostAction)).Methods(http.MethodPost)
	api.Handle("/hosts/{host}", s.handle(s.deleteHost)).Methods(http.MethodDelete)
}

func toHostResource(h hosts.Host) hostResource {
	self := apiPrefix + "/hosts/" + h.Name
	links := map[string]string{"self": self, "collection": apiPrefix + "/hosts", "update": self, "remove": self}
	return hostResource{resourceBase: newResourceBase(h.Name, "host", links, h.CreatedAt), Host: h}
}

// listHosts answers GET /hosts (admin): every registered host with its
// status and system information.
func (s *Server) listHosts(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see hosts"); err != nil {
		return err
	}
	list := s.hostReads.List()
	data := make([]any, 0, len(list))
	for _, h := range list {
		data = append(data, toHostResource(h))
	}
	return writeCollection(w, "host", apiPrefix+"/hosts", data)
}

func (s *Server) getHost(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see hosts"); err != nil {
		return err
	}
	h, err := s.hostReads.Get(mux.Vars(r)["host"])
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toHostResource(h))
}

// createHost answers POST /hosts (admin): the host is registered, its key
// sealed, and probed at once.
func (s *Server) createHost(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "register hosts"); err != nil {
		return err
	}
	var req hostRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	h, err := s.opts.Hosts.Create(r.Context(), req.HostSpec)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, toHostResource(h))
}

// updateHost answers PUT /hosts/{host} (admin); without sshKey the stored
// key stays.
func (s *Server) updateHost(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change hosts"); err != nil {
		return err
	}
	var req hostRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	h, err := s.opts.Hosts.Update(r.Context(), mux.Vars(r)["host"], req.HostSpec)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toHostResource(h))
}

func (s *Server) deleteHost(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "delete hosts"); err != nil {
		return err
	}
	if err := s.opts.Hosts.Delete(r.Context(), mux.Vars(r)["host"]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// hostCommandResource is a command run on hosts as the API shows it; its
// id is the record's.
type hostCommandResource struct {
	resourceBase
	Command    []string              `json:"command"`
	Selector   string                `json:"selector,omitempty"`
	Hosts      []string              `json:"hosts"`
	StartedBy  string                `json:"startedBy"`
	StartedAt  time.Time             `json:"startedAt"`
	FinishedAt *time.Time            `json:"finishedAt,omitempty"`
	State      string                `json:"state"`
	Results    []hosts.CommandResult `json:"results"`
	// Truncated says that some host's output was cut to the record's
	// share (its result says which, and its output ends or starts with
	// a line saying what was kept).
	Truncated bool `json:"truncated,omitempty"`
}

func toHostCommandResource(c hosts.CommandRecord) hostCommandResource {
	self := apiPrefix + "/hosts/commands/" + c.ID
	return hostCommandResource{
		resourceBase: newResourceBase(c.ID, "hostcommand", map[string]string{"self": self, "collection": apiPrefix + "/hosts/commands"}, c.StartedAt),
		Command:      c.Command, Selector: c.Selector, Hosts: c.Hosts, StartedBy: c.StartedBy, StartedAt: c.StartedAt,
		FinishedAt: c.FinishedAt, State: c.State, Results: c.Results, Truncated: c.Truncated,
	}
}

// runHostCommand answers POST /hosts/{host}/commands and POST
// /hosts/commands?selector=… (admin): 202 with the command's record,
// Running; GET it for the results, or follow its output as it comes on
// the websocket GET /apis/ws.zcloud.cn/v1/hosts/commands/{id}. Every command is audited: its record
// names who ran what where, and the log has a line at its start and end.
func (s *Server) runHostCommand(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "run commands on hosts"); err != nil {
		return err
	}
	var req hosts.CommandRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	actor, _ := userFrom(r.Context())
	rec, err := s.opts.Hosts.RunCommand(r.Context(), actor, mux.Vars(r)["host"], r.URL.Query().Get("selector"), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, toHostCommandResource(rec))
}

func (s *Server) getHostCommand(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see commands run on hosts"); err != nil {
		return err
	}
	rec, err := s.hostReads.Command(mux.Vars(r)["id"])
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toHostCommandResource(rec))
}

func (s *Server) listHostCommands(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "see commands run on hosts"); err != nil {
		return err
	}
	recs, err := s.hostReads.Commands()
	if err != nil {
		return err
	}
	data := make([]any, 0, len(recs))
	for _, c := range recs {
		// The list carries exit codes and truncated flags, not outputs
		// (up to 1 MiB per command): GET one command for them.
		c.Results = slices.Clone(c.Results)
		for i := range c.Results {
			c.Results[i].Stdout, c.Results[i].Stderr = "", ""
		}
		data = append(data, toHostCommandResource(c))
	}
	return writeCollection(w, "hostcommand", apiPrefix+"/hosts/commands", data)
}

// postHostAction runs ?action=forgetHostKey (admin): a host that was
// reinstalled presents a new SSH host key, which the probes refuse until
// the pinned one is forgotten; the next probe pins the new one. And
// ?action=check (admin): a create's checks against the host (hostcheck.go).
func (s *Server) postHostAction(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change hosts"); err != nil {
		return err
	}
	switch action := r.URL.Query().Get("action"); action {
	case "forgetHostKey":
		h, err := s.opts.Hosts.ForgetHostKey(r.Context(), mux.Vars(r)["host"])
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, toHostResource(h))
	case "check":
		return s.checkHost(w, r)
	default:
		return unknownAction(action)
	}
}
