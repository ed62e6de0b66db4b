package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/validation"
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

// loginRequest is the body of ?action=login. User is what singlecloud's
// clients send besides the password: accepted when it names the user of
// the URL.
type loginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// loginResponse is the answer to a login.
type loginResponse struct {
	Token string `json:"token"`
}

// resetPasswordRequest is the body of ?action=resetPassword. The new
// password is NewPassword, as singlecloud's clients name it, or Password.
type resetPasswordRequest struct {
	OldPassword string `json:"oldPassword"`
	NewPassword string `json:"newPassword"`
	Password    string `json:"password"`
}

// newDigest is the new password of the request, from whichever field
// carries it; both must agree when both are given.
func (req resetPasswordRequest) newDigest() (string, error) {
	switch {
	case req.NewPassword == "":
		return req.Password, nil
	case req.Password == "" || req.Password == req.NewPassword:
		return req.NewPassword, nil
	default:
		return "", invalidOption("newPassword and password differ; send the new password in newPassword only")
	}
}

func (s *Server) registerUserRoutes(api *mux.Router) {
	api.Handle("/users", s.handle(s.listUsers)).Methods(http.MethodGet)
	api.Handle("/users", s.handle(s.createUser)).Methods(http.MethodPost)
	api.Handle("/users/{user}", s.handle(s.getUser)).Methods(http.MethodGet)
	api.Handle("/users/{user}", s.handle(s.postUserAction)).Methods(http.MethodPost)
	api.Handle("/users/{user}", s.handle(s.updateUser)).Methods(http.MethodPut)
	api.Handle("/users/{user}", s.handle(s.deleteUser)).Methods(http.MethodDelete)
}

// toUserResource renders u for a caller; an admin caller also gets
// singlecloud's "update" link, and "remove" on every user but the admin,
// which cannot be deleted.
func toUserResource(u auth.User, callerIsAdmin bool) userResource {
	self := apiPrefix + "/users/" + u.Name
	links := map[string]string{"self": self, "collection": apiPrefix + "/users"}
	if callerIsAdmin {
		links["update"] = self
		if u.Name != auth.AdminName {
			links["remove"] = self
		}
	}
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
		data = append(data, toUserResource(u, admin))
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
	if err := s.checkGrantClusters(req.Projects); err != nil {
		return err
	}
	u, err := s.opts.Users.Create(auth.User{Name: req.Name, Projects: req.Projects}, req.Password)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusCreated, toUserResource(u, callerIsAdmin(r)))
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
	return writeResource(w, http.StatusOK, toUserResource(u, callerIsAdmin(r)))
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
	if err := s.checkGrantClusters(req.Projects); err != nil {
		return err
	}
	u, err := s.opts.Users.Update(auth.User{Name: target, Projects: req.Projects})
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toUserResource(u, callerIsAdmin(r)))
}

// deleteUser deletes a user and ends the user's open streams, whose
// tokens no longer authenticate anyone.
func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "delete users"); err != nil {
		return err
	}
	target := mux.Vars(r)["user"]
	if err := s.opts.Users.Delete(target); err != nil {
		return err
	}
	s.streams.endUser(target, endUserDeleted)
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
// token (see authenticate); failed attempts are throttled (loginThrottle).
func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["user"]
	var req loginRequest
	if err := s.decodeBody(r, &req); err != nil {
		return err
	}
	if req.User != "" && req.User != name {
		return invalidOption(fmt.Sprintf("user: %q differs from user %s of the URL; log in at %s/users/<name>?action=login with the same name in both",
			req.User, name, apiPrefix))
	}
	u, err := s.checkPassword(w, r, name, true, func() (auth.User, error) { return s.opts.Users.Authenticate(name, req.Password) })
	if err != nil {
		s.countLoginFailure(err)
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
// and the admin set anyone else's. The new password revokes the user's
// tokens, so the user's open streams end.
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
	digest, err := req.newDigest()
	if err != nil {
		return err
	}
	_, err = s.checkPassword(w, r, target, self == target, func() (auth.User, error) {
		if self == target {
			return auth.User{}, s.opts.Users.ResetPassword(target, req.OldPassword, digest)
		}
		return auth.User{}, s.opts.Users.SetPassword(target, digest)
	})
	if err != nil {
		return err
	}
	s.streams.endUser(target, endPasswordChanged)
	u, err := s.opts.Users.Get(target)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toUserResource(u, callerIsAdmin(r)))
}

// checkPassword runs check, a password check or change of user (bcrypt),
// once the login throttle admits it, and tells the throttle the outcome:
// a wrong password is charged; a success of a check that verified user's
// password (verifies) trusts the client's address for user.
func (s *Server) checkPassword(w http.ResponseWriter, r *http.Request, user string, verifies bool, check func() (auth.User, error)) (auth.User, error) {
	// Throttled by the client's address, also when a follower forwarded
	// the request (forwardedclient.go).
	from := r.WithContext(r.Context())
	from.RemoteAddr = s.clientAddr(r)
	done, err := s.logins.admit(w, from, user)
	if err != nil {
		return auth.User{}, err
	}
	u, err := check()
	switch {
	case errors.Is(err, auth.ErrBadCredentials):
		done(checkFailed)
	case err == nil && verifies:
		done(checkPassed)
	default:
		done(checkOther)
	}
	return u, err
}

// checkGrantClusters refuses projects on clusters that do not exist, each
// a field error naming it: a grant is given to a cluster singlecloud
// manages, and goes when that cluster is deleted (auth.DropClusterGrants).
// Names that are not cluster names at all are left to auth's validation,
// which reports them with the rule (listed here too when a cluster is
// missing, so that one answer names every broken field). A cluster deleted between this check
// and the user's save leaves a grant that auth.PruneGrants drops at the
// next start.
func (s *Server) checkGrantClusters(projects []auth.Project) error {
	var errs []error
	for i, p := range projects {
		if validation.CheckClusterName("cluster", p.Cluster) != nil {
			continue
		}
		_, err := s.opts.Clusters.Get(p.Cluster)
		switch {
		case errors.Is(err, clustermanager.ErrNotFound):
			errs = append(errs, &auth.FieldError{Field: fmt.Sprintf("projects[%d].cluster", i),
				Message: fmt.Sprintf("cluster %s does not exist; import or create it first", p.Cluster)})
		case err != nil:
			return fmt.Errorf("look up cluster %s of projects[%d]: %w", p.Cluster, i, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(append(errs, auth.ValidateProjects(projects))...)
}

// callerIsAdmin reports whether the request was made by the admin.
func callerIsAdmin(r *http.Request) bool {
	_, admin := userFrom(r.Context())
	return admin
}
