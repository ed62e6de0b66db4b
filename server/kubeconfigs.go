package server

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	kubecfg "github.com/zdnscloud/singlecloud/internal/kubeconfig"
)

// kubeconfigUser is the one kubeconfig singlecloud hands out per cluster.
const kubeconfigUser = "kube-admin"

type kubeconfigResource struct {
	resourceBase
	User       string `json:"user"`
	KubeConfig string `json:"kubeConfig"`
}

func (s *Server) registerKubeconfigRoutes(api *mux.Router) {
	api.Handle("/clusters/{cluster}/kubeconfigs", s.handle(s.listKubeconfigs)).Methods(http.MethodGet)
	api.Handle("/clusters/{cluster}/kubeconfigs/{user}", s.handle(s.getKubeconfig)).Methods(http.MethodGet)
}

func (s *Server) kubeconfig(r *http.Request) (kubeconfigResource, error) {
	if err := requireAdmin(r, "download kubeconfigs"); err != nil {
		return kubeconfigResource{}, err
	}
	name := mux.Vars(r)["cluster"]
	kc, err := s.reads.Kubeconfig(name)
	if err != nil {
		return kubeconfigResource{}, err
	}
	if err := handOutable(name, kc); err != nil {
		return kubeconfigResource{}, err
	}
	c, err := s.reads.Get(name)
	if err != nil {
		return kubeconfigResource{}, err
	}
	base := apiPrefix + "/clusters/" + name + "/kubeconfigs"
	links := map[string]string{"self": base + "/" + kubeconfigUser, "collection": base}
	return kubeconfigResource{
		resourceBase: newResourceBase(kubeconfigUser, "kubeconfig", links, c.CreatedAt),
		User:         kubeconfigUser,
		KubeConfig:   string(kc),
	}, nil
}

func (s *Server) listKubeconfigs(w http.ResponseWriter, r *http.Request) error {
	kc, err := s.kubeconfig(r)
	if err != nil {
		return err
	}
	return writeCollection(w, "kubeconfig", kc.Links["collection"], []any{kc})
}

func (s *Server) getKubeconfig(w http.ResponseWriter, r *http.Request) error {
	if user := mux.Vars(r)["user"]; user != kubeconfigUser {
		if err := requireAdmin(r, "download kubeconfigs"); err != nil {
			return err
		}
		return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: "kubeconfig " + user + " not found; singlecloud keeps one kubeconfig per cluster, " + kubeconfigUser}
	}
	kc, err := s.kubeconfig(r)
	if err != nil {
		return err
	}
	if r.URL.Query().Get("download") != "" {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Content-Disposition", `attachment; filename="`+mux.Vars(r)["cluster"]+`.kubeconfig"`)
		w.Header().Set("Cache-Control", "no-store")
		_, err := w.Write([]byte(kc.KubeConfig))
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeResource(w, http.StatusOK, kc)
}

// handOutable refuses to hand out a stored kubeconfig that singlecloud
// would not accept now: an exec plugin or auth provider (a command run, a
// file read, on the machine of whoever uses it), a file path, a key set
// twice. Import and reconnect refuse such kubeconfigs, but a record saved
// before they did, or read by a replica whose view still says Running,
// may hold one; the generated kubeconfigs of created clusters pass. The
// reasons name fields only, never values.
func handOutable(cluster string, kc []byte) error {
	if _, err := kubecfg.Parse(kc); err != nil {
		return &APIError{Status: http.StatusConflict, Code: CodeInvalidState, Message: fmt.Sprintf(
			"the stored kubeconfig of cluster %s is not handed out: %v; reconnect the cluster with a kubeconfig that embeds its certificates and credentials "+
				"(kubectl config view --raw --flatten --minify)", cluster, err)}
	}
	return nil
}
