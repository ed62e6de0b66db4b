package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
)

// userJSON is the exact resource the API must show a non-admin for a
// user; the creation timestamp is taken from the response after checking
// its form.
func userJSON(t *testing.T, got map[string]any, name string, projects []any) map[string]any {
	t.Helper()
	ts, _ := got["creationTimestamp"].(string)
	created, err := time.Parse(time.RFC3339, ts)
	if err != nil || time.Since(created) > time.Minute || !strings.HasSuffix(ts, "Z") {
		t.Fatalf("creationTimestamp %q is not a recent RFC 3339 UTC time", ts)
	}
	return map[string]any{
		"id":   name,
		"type": "user",
		"links": map[string]any{
			"self":       apiPrefix + "/users/" + name,
			"collection": apiPrefix + "/users",
		},
		"creationTimestamp": ts,
		"name":              name,
		"projects":          projects,
	}
}

// adminUserJSON is userJSON as the admin sees it: with singlecloud's
// "update" link, and "remove" on every user but the admin.
func adminUserJSON(t *testing.T, got map[string]any, name string, projects []any) map[string]any {
	t.Helper()
	want := userJSON(t, got, name, projects)
	links := want["links"].(map[string]any)
	links["update"] = apiPrefix + "/users/" + name
	if name != auth.AdminName {
		links["remove"] = apiPrefix + "/users/" + name
	}
	return want
}

func TestLogin(t *testing.T) {
	api := newTestAPI(t)
	digest := auth.PasswordDigest(testAdminPassword)

	r := api.do(http.MethodPost, apiPrefix+"/users/admin?action=login", "", map[string]string{"password": digest})
	if r.Status != http.StatusOK {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	body := r.JSON(t)
	token, _ := body["token"].(string)
	if len(body) != 1 || token == "" {
		t.Fatalf("login body = %s, want only a token", r.Body)
	}
	if c, err := api.Tokens.Verify(token); err != nil || c.User != "admin" {
		t.Fatalf("issued token verifies as %+v, %v", c, err)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control = %q, want no-store", cc)
	}
	if got := api.do(http.MethodGet, apiPrefix+"/users", token, nil); got.Status != http.StatusOK {
		t.Fatalf("token from login refused: %d %s", got.Status, got.Body)
	}

	tests := []struct {
		name, user string
		body       any
		status     int
		code       string
		fragment   string
	}{
		{"wrong password", "admin", map[string]string{"password": auth.PasswordDigest("nope")}, 401, CodeUnauthorized, "bad user name or password"},
		{"unknown user", "ghost", map[string]string{"password": digest}, 401, CodeUnauthorized, "bad user name or password"},
		{"plaintext password", "admin", map[string]string{"password": testAdminPassword}, 422, CodeInvalidOption, "SHA-1 hex digest"},
		{"unknown field", "admin", map[string]string{"password": digest, "otp": "1"}, 422, CodeInvalidBodyContent, `unknown field "otp"`},
		{"no body", "admin", nil, 422, CodeInvalidBodyContent, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := api.do(http.MethodPost, apiPrefix+"/users/"+tt.user+"?action=login", "", tt.body)
			wantError(t, r, tt.status, tt.code, tt.fragment)
			if strings.Contains(string(r.Body), digest) {
				t.Fatal("the password digest is echoed in the response")
			}
		})
	}
}

func TestNonAdminIsForbiddenUserWrites(t *testing.T) {
	api := newTestAPI(t)
	bob := api.createUser("bob", "bob-pw", auth.Project{Cluster: "c1"})
	api.createUser("carol", "carol-pw")
	newUser := map[string]any{"name": "dave", "password": auth.PasswordDigest("x")}
	tests := []struct {
		name, method, path string
		body               any
		fragment           string
	}{
		{"create", http.MethodPost, "/users", newUser, "only admin can create users"},
		{"update other", http.MethodPut, "/users/carol", map[string]any{"projects": []any{}}, "only admin can change users"},
		{"update self", http.MethodPut, "/users/bob", map[string]any{"projects": []any{map[string]string{"cluster": "c9"}}}, "only admin can change users"},
		{"delete other", http.MethodDelete, "/users/carol", nil, "only admin can delete users"},
		{"delete self", http.MethodDelete, "/users/bob", nil, "only admin can delete users"},
		{"read other", http.MethodGet, "/users/carol", nil, "only admin can read other users"},
		{"reset other password", http.MethodPost, "/users/admin?action=resetPassword", map[string]string{"password": auth.PasswordDigest("mine")}, "only admin can reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, api.do(tt.method, apiPrefix+tt.path, bob, tt.body), http.StatusForbidden, CodePermissionDenied, tt.fragment)
		})
	}
	// Nothing changed.
	if _, err := api.Users.Get("dave"); err == nil {
		t.Fatal("a non-admin created a user")
	}
	if u, err := api.Users.Get("bob"); err != nil || len(u.Projects) != 1 || u.Projects[0].Cluster != "c1" {
		t.Fatalf("bob after refused writes: %+v, %v", u, err)
	}
	if _, err := api.Users.Get("carol"); err != nil {
		t.Fatalf("carol after refused delete: %v", err)
	}
	api.login("admin", testAdminPassword)

	// Reads of oneself are allowed; the list shows only oneself.
	r := api.do(http.MethodGet, apiPrefix+"/users/bob", bob, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET self: %d %s", r.Status, r.Body)
	}
	got := r.JSON(t)
	if want := userJSON(t, got, "bob", []any{map[string]any{"cluster": "c1", "namespace": "_all_namespaces"}}); !jsonEqual(got, want) {
		t.Fatalf("GET self = %s, want %v", r.Body, want)
	}
	r = api.do(http.MethodGet, apiPrefix+"/users", bob, nil)
	coll := r.JSON(t)
	data, _ := coll["data"].([]any)
	if r.Status != http.StatusOK || len(data) != 1 || data[0].(map[string]any)["id"] != "bob" {
		t.Fatalf("GET /users as bob = %d %s, want only bob", r.Status, r.Body)
	}
}

func TestAdminUserCRUD(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	api.createClusters(admin, "c1", "c2")
	digest := auth.PasswordDigest("eve-pw")

	// Create.
	r := api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{
		"name": "eve", "password": digest, "projects": []any{map[string]string{"cluster": "c1", "namespace": "web"}},
	})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	got := r.JSON(t)
	eveProjects := []any{map[string]any{"cluster": "c1", "namespace": "web"}}
	if want := adminUserJSON(t, got, "eve", eveProjects); !jsonEqual(got, want) {
		t.Fatalf("create = %s\nwant %v", r.Body, want)
	}
	if strings.Contains(string(r.Body), "password") || strings.Contains(string(r.Body), digest) {
		t.Fatalf("create response shows the password: %s", r.Body)
	}
	api.login("eve", "eve-pw")

	wantError(t, api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{"name": "eve", "password": digest}),
		http.StatusUnprocessableEntity, CodeDuplicateResource, "eve")
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{"name": "Bad_Name", "password": "plain", "projects": []any{map[string]string{}}}),
		http.StatusUnprocessableEntity, CodeInvalidOption, "name: must be", "password: must be the SHA-1 hex digest", "projects[0].cluster: is required")

	// Read.
	r = api.do(http.MethodGet, apiPrefix+"/users/eve", admin, nil)
	if got := r.JSON(t); r.Status != http.StatusOK || !jsonEqual(got, adminUserJSON(t, got, "eve", eveProjects)) {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/nobody", admin, nil), http.StatusNotFound, CodeNotFound, "nobody")

	// List: the exact collection envelope.
	r = api.do(http.MethodGet, apiPrefix+"/users", admin, nil)
	coll := r.JSON(t)
	data, _ := coll["data"].([]any)
	if len(data) != 2 {
		t.Fatalf("list: %s", r.Body)
	}
	wantColl := map[string]any{
		"type":         "collection",
		"resourceType": "user",
		"links":        map[string]any{"self": apiPrefix + "/users"},
		"data": []any{
			adminUserJSON(t, data[0].(map[string]any), "admin", []any{}),
			adminUserJSON(t, data[1].(map[string]any), "eve", eveProjects),
		},
	}
	if r.Status != http.StatusOK || !jsonEqual(coll, wantColl) {
		t.Fatalf("list = %d %s\nwant %v", r.Status, r.Body, wantColl)
	}

	// Update: projects change; an echoed resource is accepted.
	echo := adminUserJSON(t, got, "eve", []any{map[string]any{"cluster": "c2", "namespace": "_all_namespaces"}})
	r = api.do(http.MethodPut, apiPrefix+"/users/eve", admin, echo)
	if got := r.JSON(t); r.Status != http.StatusOK || !jsonEqual(got, echo) {
		t.Fatalf("update = %d %s\nwant %v", r.Status, r.Body, echo)
	}
	wantError(t, api.do(http.MethodPut, apiPrefix+"/users/eve", admin, map[string]any{"password": digest}),
		http.StatusUnprocessableEntity, CodeInvalidOption, "action=resetPassword")
	wantError(t, api.do(http.MethodPut, apiPrefix+"/users/eve", admin, map[string]any{"name": "other"}),
		http.StatusUnprocessableEntity, CodeInvalidOption, "cannot be renamed")
	wantError(t, api.do(http.MethodPut, apiPrefix+"/users/nobody", admin, map[string]any{"projects": []any{}}),
		http.StatusNotFound, CodeNotFound, "nobody")
	r = api.do(http.MethodPut, apiPrefix+"/users/eve", admin, map[string]any{"projects": nil})
	if got := r.JSON(t); r.Status != http.StatusOK || !jsonEqual(got["projects"], []any{}) {
		t.Fatalf("update to no projects = %d %s", r.Status, r.Body)
	}

	// Delete.
	wantError(t, api.do(http.MethodDelete, apiPrefix+"/users/admin", admin, nil), http.StatusForbidden, CodePermissionDenied, "admin cannot be deleted")
	r = api.do(http.MethodDelete, apiPrefix+"/users/eve", admin, nil)
	if r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/eve", admin, nil), http.StatusNotFound, CodeNotFound, "eve")
	wantError(t, api.do(http.MethodDelete, apiPrefix+"/users/eve", admin, nil), http.StatusNotFound, CodeNotFound, "eve")
}

func TestResetPassword(t *testing.T) {
	api := newTestAPI(t)
	admin := api.adminToken()
	bob := api.createUser("bob", "one")
	path := apiPrefix + "/users/bob?action=resetPassword"
	reset := func(old, pw string) map[string]string {
		m := map[string]string{"password": auth.PasswordDigest(pw)}
		if old != "" {
			m["oldPassword"] = auth.PasswordDigest(old)
		}
		return m
	}

	wantError(t, api.do(http.MethodPost, path, bob, reset("wrong", "two")), http.StatusUnauthorized, CodeUnauthorized, "old password is wrong")
	wantError(t, api.do(http.MethodPost, path, bob, reset("", "two")), http.StatusUnprocessableEntity, CodeInvalidOption, "oldPassword")
	wantError(t, api.do(http.MethodPost, path, bob, map[string]string{"oldPassword": auth.PasswordDigest("one"), "password": "two"}),
		http.StatusUnprocessableEntity, CodeInvalidOption, "SHA-1 hex digest")
	api.login("bob", "one")

	r := api.do(http.MethodPost, path, bob, reset("one", "two"))
	if got := r.JSON(t); r.Status != http.StatusOK || !jsonEqual(got, userJSON(t, got, "bob", []any{})) {
		t.Fatalf("self reset: %d %s", r.Status, r.Body)
	}
	// A new password revokes every token issued with the old one.
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/bob", bob, nil), http.StatusUnauthorized, CodeUnauthorized, "log in again")
	bob = api.login("bob", "two")
	if r := api.do(http.MethodGet, apiPrefix+"/users/bob", bob, nil); r.Status != http.StatusOK {
		t.Fatalf("token issued after the reset: %d %s", r.Status, r.Body)
	}

	// The admin sets another user's password without the old one.
	if r := api.do(http.MethodPost, path, admin, reset("", "three")); r.Status != http.StatusOK {
		t.Fatalf("admin reset: %d %s", r.Status, r.Body)
	}
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/bob", bob, nil), http.StatusUnauthorized, CodeUnauthorized, "password of user bob changed")
	if r := api.do(http.MethodGet, apiPrefix+"/users/admin", admin, nil); r.Status != http.StatusOK {
		t.Fatalf("the admin's token after resetting bob's password: %d %s", r.Status, r.Body)
	}
	api.login("bob", "three")

	// A user deleted and created again under the same name does not get
	// the old user's tokens back.
	bob = api.login("bob", "three")
	if r := api.do(http.MethodDelete, apiPrefix+"/users/bob", admin, nil); r.Status != http.StatusNoContent {
		t.Fatalf("delete bob: %d %s", r.Status, r.Body)
	}
	api.createUser("bob", "three")
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/bob", bob, nil), http.StatusUnauthorized, CodeUnauthorized, "log in again")
	// ...but needs the old one for its own.
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users/admin?action=resetPassword", admin, reset("", "new-admin")),
		http.StatusUnprocessableEntity, CodeInvalidOption, "oldPassword")
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users/ghost?action=resetPassword", admin, reset("", "x")),
		http.StatusNotFound, CodeNotFound, "ghost")
}

func TestUserActions(t *testing.T) {
	api := newTestAPI(t)
	admin := api.adminToken()
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users/admin?action=fly", admin, "{}"), http.StatusUnprocessableEntity, CodeInvalidAction, `"fly"`)
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users/admin", admin, "{}"), http.StatusUnprocessableEntity, CodeInvalidAction, "?action=")
}

// TestOriginalClientBodies: the bodies singlecloud's own clients send.
func TestOriginalClientBodies(t *testing.T) {
	api := newTestAPI(t)
	digest := auth.PasswordDigest(testAdminPassword)
	login := apiPrefix + "/users/admin?action=login"
	if r := api.do(http.MethodPost, login, "", map[string]string{"user": "admin", "password": digest}); r.Status != http.StatusOK {
		t.Fatalf("login with user equal to the path's name: %d %s", r.Status, r.Body)
	}
	wantError(t, api.do(http.MethodPost, login, "", map[string]string{"user": "ann", "password": digest}),
		http.StatusUnprocessableEntity, CodeInvalidOption, "user", `"ann"`, "differs")

	token := api.createUser("ann", "zdns")
	path := apiPrefix + "/users/ann?action=resetPassword"
	r := api.do(http.MethodPost, path, token, map[string]string{"oldPassword": auth.PasswordDigest("zdns"), "newPassword": auth.PasswordDigest("zdns1")})
	if r.Status != http.StatusOK {
		t.Fatalf("resetPassword with newPassword: %d %s", r.Status, r.Body)
	}
	token = api.login("ann", "zdns1")
	wantError(t, api.do(http.MethodPost, path, token, map[string]string{
		"oldPassword": auth.PasswordDigest("zdns1"), "newPassword": auth.PasswordDigest("a"), "password": auth.PasswordDigest("b"),
	}), http.StatusUnprocessableEntity, CodeInvalidOption, "newPassword and password differ")
	r = api.do(http.MethodPost, path, token, map[string]string{
		"oldPassword": auth.PasswordDigest("zdns1"), "newPassword": auth.PasswordDigest("c"), "password": auth.PasswordDigest("c"),
	})
	if r.Status != http.StatusOK {
		t.Fatalf("resetPassword with equal newPassword and password: %d %s", r.Status, r.Body)
	}
	api.login("ann", "c")
}

func TestProjectGrantsNeedAClusterName(t *testing.T) {
	api := newTestAPI(t)
	admin := api.adminToken()
	r := api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{
		"name": "ann", "password": auth.PasswordDigest("pw"),
		"projects": []map[string]string{{"cluster": "ok", "namespace": "_all_namespaces"}, {"cluster": "Bad_Name", "namespace": "default"}},
	})
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption, "projects[1].cluster", "DNS-1123")
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/ann", admin, nil), http.StatusNotFound, CodeNotFound)
}

func TestGrantsAllowNamespaces(t *testing.T) {
	api := newTestAPI(t)
	api.createUser("ann", "pw",
		auth.Project{Cluster: "one", Namespace: "default"}, auth.Project{Cluster: "one", Namespace: "web"},
		auth.Project{Cluster: "two", Namespace: "_all_namespaces"}, auth.Project{Cluster: "three", Namespace: "_all"},
		auth.Project{Cluster: "four"})
	r := httptestRequestAs(t, "ann", false)
	g, err := api.Server.grants(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cluster, ns string
		want        bool
	}{
		{"one", "default", true}, {"one", "web", true}, {"one", "kube-system", false},
		{"two", "kube-system", true}, {"three", "anything", true}, {"four", "x", true},
		{"five", "default", false},
	} {
		if got := g.allowsNamespace(tc.cluster, tc.ns); got != tc.want {
			t.Errorf("ann allowsNamespace(%s, %s) = %v, want %v", tc.cluster, tc.ns, got, tc.want)
		}
	}
	admin, err := api.Server.grants(httptestRequestAs(t, auth.AdminName, true))
	if err != nil || !admin.allowsNamespace("any", "thing") {
		t.Fatalf("admin grants %+v, %v: want every namespace", admin, err)
	}
}

// httptestRequestAs is a request authenticated as name.
func httptestRequestAs(t *testing.T, name string, admin bool) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, "/", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, principal{name: name, admin: admin}))
}

// createClusters creates each named cluster through the API (the
// installer fails them soon, which leaves them existing, Unavailable).
func (a *testAPI) createClusters(admin string, names ...string) {
	a.t.Helper()
	for _, name := range names {
		if r := a.do(http.MethodPost, apiPrefix+"/clusters", admin, clusterJSON(a.t, name)); r.Status != http.StatusCreated {
			a.t.Fatalf("create cluster %s: %d %s", name, r.Status, r.Body)
		}
	}
}

// TestGrantToMissingClusterRefused: a grant names a cluster singlecloud
// manages; one to a cluster that does not exist (yet, or any more) is
// refused at grant time, on create and on update, naming the project.
func TestGrantToMissingClusterRefused(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	api.createClusters(admin, "lab")
	grants := func(clusters ...string) []map[string]string {
		var out []map[string]string
		for _, c := range clusters {
			out = append(out, map[string]string{"cluster": c, "namespace": "default"})
		}
		return out
	}

	r := api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{
		"name": "ann", "password": auth.PasswordDigest("pw"), "projects": grants("lab", "future"),
	})
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption,
		"projects[1].cluster: cluster future does not exist; import or create it first")
	if strings.Contains(string(r.Body), "projects[0]") {
		t.Errorf("the grant to the existing cluster was refused too: %s", r.Body)
	}
	wantError(t, api.do(http.MethodGet, apiPrefix+"/users/ann", admin, nil), http.StatusNotFound, CodeNotFound)

	if r := api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{
		"name": "ann", "password": auth.PasswordDigest("pw"), "projects": grants("lab"),
	}); r.Status != http.StatusCreated {
		t.Fatalf("create with a grant to an existing cluster: %d %s", r.Status, r.Body)
	}
	wantError(t, api.do(http.MethodPut, apiPrefix+"/users/ann", admin, map[string]any{"projects": grants("lab", "future")}),
		http.StatusUnprocessableEntity, CodeInvalidOption, "projects[1].cluster: cluster future does not exist")
	if u, err := api.Users.Get("ann"); err != nil || len(u.Projects) != 1 || u.Projects[0].Cluster != "lab" {
		t.Fatalf("ann after the refused update: %+v, %v; want only the lab grant", u, err)
	}

	// Once the cluster exists, the same grant is accepted.
	api.createClusters(admin, "future")
	if r := api.do(http.MethodPut, apiPrefix+"/users/ann", admin, map[string]any{"projects": grants("lab", "future")}); r.Status != http.StatusOK {
		t.Fatalf("update after the cluster was created: %d %s", r.Status, r.Body)
	}
}

// TestGrantNamespaceChecked: a namespace is a DNS-1123 label or one of the
// spellings of every namespace, stored as "_all_namespaces".
func TestGrantNamespaceChecked(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	api.createClusters(admin, "lab")
	wantError(t, api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{
		"name": "ann", "password": auth.PasswordDigest("pw"),
		"projects": []map[string]string{{"cluster": "lab", "namespace": "Bad/NS"}},
	}), http.StatusUnprocessableEntity, CodeInvalidOption, "projects[0].namespace", "DNS-1123")
	r := api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{
		"name": "ann", "password": auth.PasswordDigest("pw"),
		"projects": []map[string]string{{"cluster": "lab", "namespace": "_all"}, {"cluster": "lab", "namespace": ""}},
	})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if want := `"projects":[{"cluster":"lab","namespace":"_all_namespaces"}]`; !strings.Contains(string(r.Body), want) {
		t.Fatalf("create = %s; want %s", r.Body, want)
	}
}
