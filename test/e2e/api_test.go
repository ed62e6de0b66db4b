package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// nowhereKubeconfig points at a closed loopback port: such a cluster stays
// Connecting, which is all these API tests need.
const nowhereKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

func TestFirstStartAdminPassword(t *testing.T) {
	inst := startInstance(t, "")
	path := filepath.Join(inst.dir, "singlecloud.admin-password")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, st.Mode().Perm())
	}
	if strings.Contains(inst.logText(), inst.password) || !strings.Contains(inst.logText(), path) {
		t.Error("the first start's log shows the generated password or does not name its file")
	}
	inst.admin(t)
	// A restart neither regenerates nor reprints the password.
	inst.restart(15)
	b, _ := os.ReadFile(path)
	if strings.TrimSpace(string(b)) != inst.password {
		t.Error("password file rewritten on restart")
	}
	if strings.Contains(inst.logText(), inst.password) {
		t.Error("password printed in the log")
	}
	inst.admin(t)
	if _, err := os.Stat(filepath.Join(inst.dir, "singlecloud.db.key")); err != nil {
		t.Errorf("no key file beside the database: %v", err)
	}
}

func TestAuthentication(t *testing.T) {
	inst := startInstance(t, "")
	anon := inst.anonymous(t)
	status, body := anon.do(http.MethodPost, apiPath+"/users/admin?action=login", map[string]string{"password": digest("wrong")})
	expectError(t, "bad password", status, body, http.StatusUnauthorized, "Unauthorized")
	status, body = anon.do(http.MethodPost, apiPath+"/users/nobody?action=login", map[string]string{"password": digest("x")})
	expectError(t, "unknown user", status, body, http.StatusUnauthorized, "Unauthorized")

	for _, path := range []string{"/clusters", "/users", "/clusters/x/nodes"} {
		status, body = anon.do(http.MethodGet, apiPath+path, nil)
		expectError(t, "no token "+path, status, body, http.StatusUnauthorized, "Unauthorized")
	}
	bad := &client{t: t, base: inst.URL, token: "not.a.jwt"}
	status, body = bad.do(http.MethodGet, apiPath+"/clusters", nil)
	expectError(t, "malformed token", status, body, http.StatusUnauthorized, "Unauthorized")
	// A well-formed HS256 token signed with another secret (header
	// {"alg":"HS256","typ":"JWT"}, subject admin, far-future expiry).
	forged := &client{t: t, base: inst.URL, token: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhZG1pbiIsImV4cCI6NDEwMjQ0NDgwMH0.8Vd3zVvH3mRr9B3lLzv8iYQbq3vJm7L4qv3dH4oQeYQ"}
	status, body = forged.do(http.MethodGet, apiPath+"/clusters", nil)
	expectError(t, "forged token", status, body, http.StatusUnauthorized, "Unauthorized")

	admin := inst.admin(t)
	if status, _ := admin.do(http.MethodGet, apiPath+"/clusters", nil); status != http.StatusOK {
		t.Errorf("admin list clusters: %d", status)
	}
	// Tokens survive a restart: the JWT secret is stored.
	inst.restart(15)
	if status, _ := admin.do(http.MethodGet, apiPath+"/clusters", nil); status != http.StatusOK {
		t.Errorf("token after restart: %d", status)
	}
}

func TestNonAdminSeesGrantedClustersAndCannotWrite(t *testing.T) {
	inst := startInstance(t, "")
	admin := inst.admin(t)
	admin.importCluster("granted", []byte(nowhereKubeconfig))
	admin.importCluster("secret", []byte(nowhereKubeconfig))
	status, body := admin.do(http.MethodPost, apiPath+"/users", map[string]any{
		"name": "ann", "password": digest("ann-pw"), "projects": []map[string]string{{"cluster": "granted", "namespace": "default"}},
	})
	if status != http.StatusCreated {
		t.Fatalf("create user: %d %v", status, body)
	}
	ann := inst.login(t, "ann", "ann-pw")
	if got := ann.names(); !slices.Equal(got, []string{"granted"}) {
		t.Errorf("ann sees %v, want [granted]", got)
	}
	if got := admin.names(); !slices.Equal(got, []string{"granted", "secret"}) {
		t.Errorf("admin sees %v", got)
	}
	if status, _ := ann.cluster("granted"); status != http.StatusOK {
		t.Errorf("ann GET granted cluster: %d", status)
	}
	status, body = ann.cluster("secret")
	expectError(t, "ann GET ungranted cluster", status, body, http.StatusForbidden, "PermissionDenied")

	writes := []struct{ method, path, body string }{
		{http.MethodPost, "/clusters?action=import", `{"name":"x","kubeconfig":"y"}`},
		{http.MethodPost, "/clusters", `{"name":"x"}`},
		{http.MethodPut, "/clusters/granted", `{}`},
		{http.MethodDelete, "/clusters/granted", ``},
		{http.MethodPost, "/clusters/granted?action=cancel", ``},
		{http.MethodGet, "/clusters/granted/kubeconfigs", ``},
		{http.MethodGet, "/clusters/granted/kubeconfigs/kube-admin?download=1", ``},
		{http.MethodPost, "/users", `{"name":"bob","password":"` + digest("b") + `"}`},
		{http.MethodDelete, "/users/admin", ``},
		{http.MethodPut, "/users/ann", `{"projects":[{"cluster":"secret","namespace":"default"}]}`},
	}
	for _, w := range writes {
		var body any
		if w.body != "" {
			body = w.body
		}
		status, resp := ann.do(w.method, apiPath+w.path, body)
		expectError(t, "ann "+w.method+" "+w.path, status, resp, http.StatusForbidden, "PermissionDenied")
	}
	if got := admin.names(); !slices.Equal(got, []string{"granted", "secret"}) {
		t.Errorf("after refused writes admin sees %v", got)
	}
	// ann's event stream carries the granted cluster's events only: the
	// ungranted one is deleted first, so its events would come first.
	events := ann.events(t)
	admin.mustDo(http.MethodDelete, apiPath+"/clusters/secret", nil, http.StatusAccepted)
	admin.mustDo(http.MethodDelete, apiPath+"/clusters/granted", nil, http.StatusAccepted)
	timeout := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("ann's event stream closed")
			}
			if ev["cluster"] != "granted" {
				t.Errorf("ann got an event of %v: %v", ev["cluster"], ev)
			}
			seen = ev["type"] == "ClusterDeleted"
		case <-timeout:
			t.Fatal("ann got no ClusterDeleted event of the granted cluster within 30s")
		}
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	inst := startInstance(t, "")
	admin := inst.admin(t)
	cases := []struct {
		name, method, path, body, code string
		mentions                       []string
	}{
		{"malformed JSON", http.MethodPost, "/clusters?action=import", `{"name":`, "InvalidBodyContent", nil},
		{"unknown field", http.MethodPost, "/clusters?action=import", `{"name":"a","kubeconfig":"x","colour":"red"}`, "InvalidBodyContent", []string{"colour"}},
		{"wrong type", http.MethodPost, "/clusters?action=import", `{"name":7,"kubeconfig":"x"}`, "InvalidBodyContent", []string{"name"}},
		{"bad import", http.MethodPost, "/clusters?action=import", `{"name":"Not_A_Name","kubeconfig":""}`, "InvalidOption", []string{"name", "kubeconfig"}},
		{"bad create", http.MethodPost, "/clusters", `{"name":"c","nodes":[{"name":"n1","address":"10.0.0.1","roles":["controlplane","worker"]},{"name":"n1","address":"nope","roles":["bogus"]}],"clusterCidr":"10.42.0.0/33"}`,
			"InvalidOption", []string{"sshUser", "sshKey", "singleCloudAddress", "nodes[0].roles", "nodes[1].name", "nodes[1].address", "nodes[1].roles", "clusterCidr"}},
	}
	for _, tc := range cases {
		status, body := admin.do(tc.method, apiPath+tc.path, tc.body)
		expectError(t, tc.name, status, body, http.StatusUnprocessableEntity, tc.code, tc.mentions...)
	}
	// A kubeconfig over its own 1 MiB bound is a field error; a body over
	// the server's 8 MiB bound is refused before it is decoded.
	big := `{"name":"big","kubeconfig":"` + strings.Repeat("x", 2<<20) + `"}`
	status, body := admin.do(http.MethodPost, apiPath+"/clusters?action=import", big)
	expectError(t, "oversized kubeconfig", status, body, http.StatusUnprocessableEntity, "InvalidOption", "kubeconfig")
	huge := `{"name":"huge","kubeconfig":"` + strings.Repeat("x", 9<<20) + `"}`
	status, body = admin.do(http.MethodPost, apiPath+"/clusters?action=import", huge)
	expectError(t, "oversized body", status, body, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", "limit")
	if got := admin.names(); len(got) != 0 {
		t.Errorf("bad input left clusters %v", got)
	}
	admin.importCluster("dup", []byte(nowhereKubeconfig))
	status, body = admin.do(http.MethodPost, apiPath+"/clusters?action=import", map[string]string{"name": "dup", "kubeconfig": nowhereKubeconfig})
	expectError(t, "duplicate import", status, body, http.StatusUnprocessableEntity, "DuplicateResource", "dup")
	status, body = admin.do(http.MethodGet, apiPath+"/clusters/nope", nil)
	expectError(t, "missing cluster", status, body, http.StatusNotFound, "NotFound", "nope")
	status, body = admin.do(http.MethodGet, apiPath+"/clusters/dup/nodes", nil)
	expectError(t, "nodes of unready cluster", status, body, http.StatusNotFound, "NotFound", "cluster dup is not ready (status Connecting)")
	status, body = admin.do(http.MethodPost, apiPath+"/clusters/dup?action=explode", nil)
	if status != http.StatusUnprocessableEntity {
		t.Errorf("unknown action: %d %v", status, body)
	}
}
