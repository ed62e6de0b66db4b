package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
)

// kubeconfigWith encodes a one-context kubeconfig for server with the
// given cluster CA and user.
func kubeconfigWith(t *testing.T, server string, ca []byte, user clientcmdv1.AuthInfo) string {
	t.Helper()
	b, err := yaml.Marshal(clientcmdv1.Config{
		Clusters:       []clientcmdv1.NamedCluster{{Name: "c", Cluster: clientcmdv1.Cluster{Server: server, CertificateAuthorityData: ca}}},
		AuthInfos:      []clientcmdv1.NamedAuthInfo{{Name: "u", AuthInfo: user}},
		Contexts:       []clientcmdv1.NamedContext{{Name: "x", Context: clientcmdv1.Context{Cluster: "c", AuthInfo: "u"}}},
		CurrentContext: "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// attack is an unsafe kubeconfig as a row saved before the API refused
// them may hold, with the field the reason must name.
type attack struct {
	name, kubeconfig, field string
}

// attacks builds the kubeconfig attacks against api: if client-go honoured
// them, the exec plugin would create marker, the token file would be sent
// as a token (and the server would answer), the URL password would show
// in reasons.
func attacks(t *testing.T, api *apiServer, marker string) []attack {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(api.token), 0o600); err != nil {
		t.Fatal(err)
	}
	exec := &clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "sh", InteractiveMode: "Never",
		Args: []string{"-c", fmt.Sprintf(`touch %s; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}'`, marker, api.token)}}
	u, err := url.Parse(api.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("admin", "hunter2-SECRET")
	return []attack{
		{"exec", kubeconfigWith(t, api.srv.URL, api.caPEM(), clientcmdv1.AuthInfo{Exec: exec}), "kubeconfig.users[0].user.exec"},
		{"tokenfile", kubeconfigWith(t, api.srv.URL, api.caPEM(), clientcmdv1.AuthInfo{TokenFile: tokenFile}), "kubeconfig.users[0].user.tokenFile"},
		{"authprovider", kubeconfigWith(t, api.srv.URL, api.caPEM(), clientcmdv1.AuthInfo{AuthProvider: &clientcmdv1.AuthProviderConfig{Name: "oidc"}}), "kubeconfig.users[0].user.auth-provider"},
		{"certpath", kubeconfigWith(t, api.srv.URL, api.caPEM(), clientcmdv1.AuthInfo{ClientCertificate: "/etc/ssl/admin.crt", ClientKey: "/etc/ssl/admin.key"}), "kubeconfig.users[0].user.client-certificate"},
		{"urlpassword", kubeconfigWith(t, u.String(), api.caPEM(), clientcmdv1.AuthInfo{Token: api.token}), "kubeconfig.clusters[0].cluster.server"},
		{"garbage", "this: [is not a kubeconfig", "kubeconfig: is not valid YAML"},
		{"nocontext", "apiVersion: v1\nkind: Config\n", "kubeconfig.current-context"},
	}
}

// TestReloadUnsafeKubeconfig stores rows as a singlecloud from before the
// fix would have saved them and reloads: each goes Unavailable naming the
// field, no plugin runs, no file is sent, no password is shown.
func TestReloadUnsafeKubeconfig(t *testing.T) {
	api := newAPIServer(t, "good")
	marker := filepath.Join(t.TempDir(), "exec-ran")
	cases := attacks(t, api, marker)
	store := storagetest.Open(t)
	storeImported(t, store, len(cases), func(i int) string { return cases[i].kubeconfig })

	h := newHarness(t, store)
	for i, tc := range cases {
		name := fmt.Sprintf("c%05d", i)
		c := h.waitStatus(name, fsm.StateUnavailable, 10*time.Second)
		if !strings.Contains(c.Reason, tc.field) || !strings.Contains(c.Reason, "kubeconfig is not usable") {
			t.Errorf("%s: reason %q does not name %s", tc.name, c.Reason, tc.field)
		}
		if strings.Contains(c.Reason, "SECRET") {
			t.Errorf("%s: reason %q shows the URL's password", tc.name, c.Reason)
		}
		rec, err := h.storedStatus(name)
		if err != nil || rec.Status != fsm.StateUnavailable || !rec.Unavailable || rec.Reason != c.Reason {
			t.Errorf("%s: stored %+v (%v), want Unavailable with the reason", tc.name, rec, err)
		}
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the exec plugin of a stored kubeconfig ran (marker: %v)", err)
	}
	if n := api.hits.Load(); n != 0 {
		t.Errorf("the API server got %d requests from unsafe kubeconfigs", n)
	}
}

// TestImportAndReconnectRefuseUnsafeKubeconfig checks the API path: the
// refusal comes before anything is saved or changed.
func TestImportAndReconnectRefuseUnsafeKubeconfig(t *testing.T) {
	api := newAPIServer(t, "good")
	marker := filepath.Join(t.TempDir(), "exec-ran")
	h := newHarness(t, nil)
	if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: "bad-token", Kubeconfig: kubeconfig(api.srv.URL, api.caPEM(), "wrong")}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("bad-token", fsm.StateUnavailable, 10*time.Second)
	before, err := h.storedStatus("bad-token")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range attacks(t, api, marker) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.m.Import(context.Background(), model.ImportRequest{Name: tc.name, Kubeconfig: tc.kubeconfig})
			var verrs validation.Errors
			if !errors.As(err, &verrs) || !errors.Is(err, validation.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("import: %v, want a field error naming %s", err, tc.field)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("import error %q shows the URL's password", err)
			}
			if _, err := h.store.Get(storage.BucketClusters, tc.name); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("refused import saved a row: %v", err)
			}
			if _, err := h.m.Get(tc.name); !errors.Is(err, ErrNotFound) {
				t.Errorf("refused import is listed: %v", err)
			}

			_, err = h.m.Reconnect(context.Background(), "bad-token", tc.kubeconfig)
			if !errors.Is(err, validation.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("reconnect: %v, want a field error naming %s", err, tc.field)
			}
			after, err := h.storedStatus("bad-token")
			if err != nil || after.Status != fsm.StateUnavailable || string(after.secrets.Kubeconfig) != string(before.secrets.Kubeconfig) {
				t.Errorf("refused reconnect changed the row: %+v (%v)", after, err)
			}
		})
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the exec plugin ran (marker: %v)", err)
	}
}

// TestClassifyRedactsURLs checks that reasons built from connection errors
// never carry a URL's credentials, while classification still works.
func TestClassifyRedactsURLs(t *testing.T) {
	const host = "https://admin:hunter2@10.0.0.1:6443"
	urlErr := &url.Error{Op: "Get", URL: host + "/version?token=hunter2", Err: errors.New("connection refused")}
	tests := []struct {
		name      string
		err       error
		permanent bool
		want      string
	}{
		{"transient", urlErr, false, `https://10.0.0.1:6443: Get "https://10.0.0.1:6443/version?token=redacted": connection refused`},
		{"unauthorized", apierrors.NewUnauthorized("no"), true, "https://10.0.0.1:6443: 401 Unauthorized"},
		{"not found", apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "x"), true, "https://10.0.0.1:6443: not a Kubernetes API server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify(host, tt.err)
			if errors.Is(err, ErrPermanent) != tt.permanent {
				t.Errorf("permanent = %v, want %v", errors.Is(err, ErrPermanent), tt.permanent)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("%v does not wrap the cause", err)
			}
			if strings.Contains(err.Error(), "hunter2") || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want it to start %q without the password", err, tt.want)
			}
		})
	}
}
