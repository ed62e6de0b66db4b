package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
)

// storedKubeconfigs is the test API's cluster manager answering with a
// stored kubeconfig per cluster, as a record saved before the API refused
// plugins may hold one.
type storedKubeconfigs struct {
	ClusterService
	kubeconfigs map[string]string
}

func (s storedKubeconfigs) Kubeconfig(name string) ([]byte, error) {
	return []byte(s.kubeconfigs[name]), nil
}

func (s storedKubeconfigs) Get(name string) (clustermanager.Cluster, error) {
	return clustermanager.Cluster{Name: name, Status: fsm.StateRunning, CreatedAt: time.Now()}, nil
}

// TestKubeconfigWithAPluginIsNeverHandedOut: a stored kubeconfig with an
// exec plugin, an auth provider or an exec hidden by a key set twice is
// refused by every route that hands kubeconfigs out, naming the field and
// quoting nothing of the plugin; a clean one downloads as stored.
func TestKubeconfigWithAPluginIsNeverHandedOut(t *testing.T) {
	const head = "clusters: [{name: c, cluster: {server: \"https://10.0.0.1:6443\", insecure-skip-tls-verify: true}}]\n" +
		"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
	stored := map[string]string{
		"clean":     head + "users: [{name: u, user: {token: t0k3n}}]\n",
		"exec":      head + "users: [{name: u, user: {exec: {command: pwn-marker}}}]\n",
		"provider":  head + "users: [{name: u, user: {auth-provider: {name: gcp, config: {cmd-path: pwn-marker}}}}]\n",
		"duplicate": head + "users:\n- name: u\n  user:\n    exec: {command: pwn-marker}\n    exec: null\n    token: t0k3n\n",
	}
	api := newTestAPI(t, func(o *Options) { o.Clusters = storedKubeconfigs{ClusterService: o.Clusters, kubeconfigs: stored} })
	token := api.adminToken()
	for name, field := range map[string]string{
		"exec":      "kubeconfig.users[0].user.exec",
		"provider":  "kubeconfig.users[0].user.auth-provider",
		"duplicate": "kubeconfig.users[0].user.exec",
	} {
		for _, path := range []string{"/kubeconfigs", "/kubeconfigs/kube-admin", "/kubeconfigs/kube-admin?download=1"} {
			r := api.do(http.MethodGet, apiPrefix+"/clusters/"+name+path, token, nil)
			wantError(t, r, http.StatusConflict, CodeInvalidState, field, "reconnect the cluster")
			if strings.Contains(string(r.Body), "pwn-marker") {
				t.Errorf("%s%s: the answer quotes the plugin: %s", name, path, r.Body)
			}
		}
	}
	r := api.do(http.MethodGet, apiPrefix+"/clusters/clean/kubeconfigs/kube-admin?download=1", token, nil)
	if r.Status != http.StatusOK || string(r.Body) != stored["clean"] {
		t.Errorf("clean kubeconfig: %d %q", r.Status, r.Body)
	}
}
