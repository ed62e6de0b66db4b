package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/server/auth"
)

// userResource is a user as the API shows it: never with a password.
type userResource struct {
	resourceBase
	Name     string         `json:"name"`
	Projects []auth.Project `json:"projects"`
}

// echoedFields are the read-only resource fields a client may send back
// unchanged (a GET, edited, then PUT); they are accepted and ignored.
type echoedFields struct {
	ID                json.RawMessage `json:"id,omitempty"`
	Type              json.RawMessage `json:"type,omitempty"`
	Links             json.RawMessage `json:"links,omitempty"`
	CreationTimestamp json.RawMessage `json:"creationTimestamp,omitempty"`
}

// userRequest is the body of POST /users and PUT /users/{user}. On PUT
// only projects may change.
type userRequest struct {
	echoedFields
	Name     string         `json:"name"`
	Password string         `json:"password"`
	Projects []auth.Project `json:"projects"`
}

// loginRequest is the body of ?action=login.
type loginRequest struct {
	Password string `json:"password"`
}

// loginResponse is the answer to a login.
type loginResponse struct {
	Token string `json:"token"`
}

// resetPasswordRequest is the body of ?action=resetPassword.
type resetPasswordRequest struct {
	OldPassword string `json:"oldPassword"`
	Password    string `json:"password"`
}

func (s *Server) registerUserRoutes(api *mux.Router) {
	api.Handle("/users", s.handle(s.listUsers)).Methods(http.MethodGet)
	api.Handle("/users", s.handle(s.createUser)).Methods(http.MethodPost)
	api.Handle("/users/{user}", s.handle(s.getUser)).Methods(http.MethodGet)
	api.Handle("/users/{user}", s.handle(s.postUserAction)).Methods(http.MethodPost)
	api.Handle("/users/{user}", s.handle(s.updateUser)).Methods(http.MethodPut)
	api.Handle("/users/{user}", s.handle(s.deleteUser)).Methods(http.MethodDelete)
}

func toUserResource(u auth.User) userResource {
	self := apiPrefix + "/users/" + u.Name
	links := map[string]string{"self": self, "collection": apiPrefix + "/users"}
	projects := u.Projects
	if projects == nil {
		projects = []auth.Project{}
	}
	return userResource{
		resourceBase: newResourceBase(u.Name, "user", links, u.CreatedAt),
		Name:         u.Name,
		Projects:     projects,
	}
}

// listUsers shows the admin every user and anyone else only themselves.
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	name, admin := userFrom(r.Context())
	var users []auth.User
	if admin {
		all, err := s.opts.Users.List()
		if err != nil {
			return err
		}
		users = all
	} else {
		self, err := s.opts.Users.Get(name)
		if err != nil {
			return err
		}
		users = []auth.User{self}
	}
	data := make([]any, 0, len(users))
	for _, u := range users {
		data = append(data, toUserResource(u))
	}
	return writeCollection(w, "user", apiPrefix+"/users", data)
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "create users"); err != nil {
		return err
	}
	var req userRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	u, err := s.opts.Users.Create(auth.User{Name: req.Name, Projects: req.Projects}, req.Password)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusCreated, toUserResource(u))
}

// getUser shows a user to the admin or to that user.
func (s *Server) getUser(w http.ResponseWriter, r *http.Request) error {
	target := mux.Vars(r)["user"]
	if self, admin := userFrom(r.Context()); !admin && self != target {
		return permissionDenied("only admin can read other users")
	}
	u, err := s.opts.Users.Get(target)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toUserResource(u))
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "change users"); err != nil {
		return err
	}
	target := mux.Vars(r)["user"]
	var req userRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	if req.Name != "" && req.Name != target {
		return invalidOption(fmt.Sprintf("name: %q differs from user %s of the URL; users cannot be renamed", req.Name, target))
	}
	if req.Password != "" {
		return invalidOption("password: cannot be changed by PUT; use POST " + apiPrefix + "/users/" + target + "?action=resetPassword")
	}
	u, err := s.opts.Users.Update(auth.User{Name: target, Projects: req.Projects})
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toUserResource(u))
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "delete users"); err != nil {
		return err
	}
	if err := s.opts.Users.Delete(mux.Vars(r)["user"]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// postUserAction runs ?action=login or ?action=resetPassword.
func (s *Server) postUserAction(w http.ResponseWriter, r *http.Request) error {
	switch action := r.URL.Query().Get("action"); action {
	case "login":
		return s.login(w, r)
	case "resetPassword":
		return s.resetPassword(w, r)
	default:
		return unknownAction(action)
	}
}

// login exchanges a user's password digest for a token. It runs without a
// token (see authenticate).
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["user"]
	var req loginRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	u, err := s.opts.Users.Authenticate(name, req.Password)
	if err != nil {
		return err
	}
	token, err := s.opts.Tokens.Issue(name, u.TokenStamp)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusOK, loginResponse{Token: token})
}

// resetPassword lets users change their own password (old one required)
// and the admin set anyone else's.
func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request) error {
	target := mux.Vars(r)["user"]
	self, admin := userFrom(r.Context())
	if self != target && !admin {
		return permissionDenied("only admin can reset the password of another user")
	}
	var req resetPasswordRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	var err error
	if self == target {
		err = s.opts.Users.ResetPassword(target, req.OldPassword, req.Password)
	} else {
		err = s.opts.Users.SetPassword(target, req.Password)
	}
	if err != nil {
		return err
	}
	u, err := s.opts.Users.Get(target)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toUserResource(u))
}
