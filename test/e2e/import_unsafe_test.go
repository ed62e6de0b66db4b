package e2e

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

// secretMark is in every credential these tests plant; it must never show
// in an answer or the server's log.
const secretMark = "hunter2-SECRET"

// rejectingAPIServer is an HTTPS API server on loopback that answers 401
// to everything and counts the requests it got.
type rejectingAPIServer struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newRejectingAPIServer(t *testing.T) *rejectingAPIServer {
	a := &rejectingAPIServer{}
	a.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// kubeconfig encodes a one-context kubeconfig for server, trusting the
// test server's certificate, with the given cluster edits and user.
func (a *rejectingAPIServer) kubeconfig(t *testing.T, server string, edit func(*clientcmdv1.Cluster), user clientcmdv1.AuthInfo) []byte {
	t.Helper()
	cl := clientcmdv1.Cluster{Server: server, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})}
	if edit != nil {
		edit(&cl)
	}
	b, err := yaml.Marshal(clientcmdv1.Config{
		APIVersion: "v1", Kind: "Config",
		Clusters:       []clientcmdv1.NamedCluster{{Name: "c", Cluster: cl}},
		AuthInfos:      []clientcmdv1.NamedAuthInfo{{Name: "u", AuthInfo: user}},
		Contexts:       []clientcmdv1.NamedContext{{Name: "x", Context: clientcmdv1.Context{Cluster: "c", AuthInfo: "u"}}},
		CurrentContext: "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImportRefusesUnsafeKubeconfig repeats the kubeconfig attacks of
// issue 8 through the binary: an exec plugin, a token file, certificate
// and key paths, an auth provider and a password in the server URL are
// each refused with 422 naming the field, on import and on reconnect,
// before anything is saved; no plugin runs, no file is sent, and no
// credential shows in an answer or the log.
func TestImportRefusesUnsafeKubeconfig(t *testing.T) {
	api := newRejectingAPIServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file-token-"+secretMark), 0o644); err != nil {
		t.Fatal(err)
	}
	withPassword, err := url.Parse(api.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	withPassword.User = url.UserPassword("admin", secretMark)
	exec := &clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "sh", InteractiveMode: "Never",
		Args: []string{"-c", `id > ` + marker + `; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}'`}}
	cases := []struct {
		name       string
		kubeconfig []byte
		field      string
		reason     string
	}{
		{"exec", api.kubeconfig(t, api.srv.URL, nil, clientcmdv1.AuthInfo{Exec: exec}),
			"kubeconfig.users[0].user.exec", "exec plugins are not allowed; embed a token or client certificate"},
		{"tokenfile", api.kubeconfig(t, api.srv.URL, nil, clientcmdv1.AuthInfo{TokenFile: tokenFile}),
			"kubeconfig.users[0].user.tokenFile", "file paths are not allowed"},
		{"certpath", api.kubeconfig(t, api.srv.URL, nil, clientcmdv1.AuthInfo{ClientCertificate: "/etc/ssl/private/admin.crt", ClientKeyData: []byte("k")}),
			"kubeconfig.users[0].user.client-certificate", "client-certificate-data"},
		{"capath", api.kubeconfig(t, api.srv.URL, func(c *clientcmdv1.Cluster) { c.CertificateAuthority = "/etc/ssl/certs/ca.pem" }, clientcmdv1.AuthInfo{Token: "t"}),
			"kubeconfig.clusters[0].cluster.certificate-authority", "certificate-authority-data"},
		{"authprovider", api.kubeconfig(t, api.srv.URL, nil, clientcmdv1.AuthInfo{AuthProvider: &clientcmdv1.AuthProviderConfig{Name: "gcp", Config: map[string]string{"cmd-path": "/usr/bin/id"}}}),
			"kubeconfig.users[0].user.auth-provider", "not allowed"},
		{"urlpassword", api.kubeconfig(t, withPassword.String(), nil, clientcmdv1.AuthInfo{Token: "t"}),
			"kubeconfig.clusters[0].cluster.server", "must not carry credentials"},
		{"badyaml", []byte("users:\n- name: u\n  user:\n    token: [" + secretMark + "\n"),
			"kubeconfig", "is not valid YAML (line"},
	}

	inst := startInstance(t, "")
	admin := inst.admin(t)
	// An imported cluster whose credentials the server rejects: the target
	// of the reconnect attempts.
	admin.importCluster("rejected", api.kubeconfig(t, api.srv.URL, nil, clientcmdv1.AuthInfo{Token: "wrong"}))
	admin.waitStatus("rejected", "Unavailable", 20*time.Second)
	hits := api.hits.Load()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			admin := inst.admin(t)
			status, raw := admin.raw(http.MethodPost, apiPath+"/clusters?action=import", map[string]string{"name": tc.name, "kubeconfig": string(tc.kubeconfig)})
			checkRefusal(t, "import", status, raw, tc.field, tc.reason)
			if code, body := admin.cluster(tc.name); code != http.StatusNotFound {
				t.Errorf("refused import created a cluster: %d %v", code, body)
			}
			if slices.Contains(admin.names(), tc.name) {
				t.Errorf("refused import is listed")
			}

			status, raw = admin.raw(http.MethodPost, apiPath+"/clusters/rejected?action=reconnect", map[string]string{"kubeconfig": string(tc.kubeconfig)})
			checkRefusal(t, "reconnect", status, raw, tc.field, tc.reason)
			if s := admin.status("rejected"); s != "Unavailable" {
				t.Errorf("refused reconnect moved the cluster to %s", s)
			}
		})
	}
	if _, err := os.Stat(marker); err == nil || !os.IsNotExist(err) {
		t.Errorf("the exec plugin ran on the singlecloud host (marker: %v)", err)
	}
	if n := api.hits.Load(); n != hits {
		t.Errorf("refused kubeconfigs made %d requests to the API server", n-hits)
	}
	// The imported cluster still works as before: a reconnect with its own
	// (safe) kubeconfig is accepted and fails on the server's 401.
	status, body := admin.do(http.MethodPost, apiPath+"/clusters/rejected?action=reconnect", nil)
	if status != http.StatusOK {
		t.Errorf("reconnect with the stored kubeconfig: %d %v", status, body)
	}
	admin.waitStatus("rejected", "Unavailable", 20*time.Second)
	for _, leak := range []string{secretMark, marker, tokenFile} {
		if strings.Contains(inst.logText(), leak) {
			t.Errorf("the server log shows %q", leak)
		}
	}
}

// checkRefusal expects a 422 InvalidOption naming field, with no secret
// or file path of the kubeconfig in it.
func checkRefusal(t *testing.T, what string, status int, raw []byte, field, reason string) {
	t.Helper()
	body := string(raw)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, `"code":"InvalidOption"`) {
		t.Fatalf("%s: %d %s, want 422 InvalidOption", what, status, body)
	}
	if !strings.Contains(body, field+": ") || !strings.Contains(body, reason) {
		t.Errorf("%s: %s does not name %s with %q", what, body, field, reason)
	}
	for _, leak := range []string{secretMark, "/etc/ssl", "/usr/bin/id", "exec-ran"} {
		if strings.Contains(body, leak) {
			t.Errorf("%s: answer %s shows %q", what, body, leak)
		}
	}
}

// TestProxyCredentialsNeverShown imports a cluster reached through a proxy
// whose URL carries credentials (a kubeconfig has no other place for
// them) and that does not answer: the cluster keeps retrying, and neither
// its reason nor the log shows the proxy's password.
func TestProxyCredentialsNeverShown(t *testing.T) {
	api := newRejectingAPIServer(t)
	inst := startInstance(t, "")
	admin := inst.admin(t)
	proxied := api.kubeconfig(t, api.srv.URL, func(c *clientcmdv1.Cluster) {
		c.ProxyURL = "http://proxyuser:" + secretMark + "@127.0.0.1:1"
	}, clientcmdv1.AuthInfo{Token: "t"})
	admin.importCluster("proxied", proxied)
	eventually(t, 20*time.Second, "proxied cluster retrying", func() (bool, string) {
		_, body := admin.cluster("proxied")
		return body["status"] == "Connecting" && strings.Contains(str(body["reason"]), "retrying"), str(body["reason"])
	})
	status, raw := admin.raw(http.MethodGet, apiPath+"/clusters/proxied", nil)
	if status != http.StatusOK || strings.Contains(string(raw), secretMark) || strings.Contains(string(raw), "proxyuser") {
		t.Errorf("GET /clusters/proxied: %d %s", status, raw)
	}
	if strings.Contains(inst.logText(), secretMark) {
		t.Error("the server log shows the proxy's password")
	}
	if n := api.hits.Load(); n != 0 {
		t.Errorf("the API server was reached around the proxy (%d requests)", n)
	}
}
