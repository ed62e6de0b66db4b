package server

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

// ClusterService is what the API needs of the cluster manager.
type ClusterService interface {
	List(onlyReady bool) []clustermanager.Cluster
	Get(name string) (clustermanager.Cluster, error)
	Import(ctx context.Context, req model.ImportRequest) (clustermanager.Cluster, error)
	Reconnect(ctx context.Context, name, kubeconfig string) (clustermanager.Cluster, error)
	Delete(ctx context.Context, name string) (clustermanager.Cluster, error)
	Cancel(ctx context.Context, name string) (clustermanager.Cluster, error)
	Kubeconfig(name string) ([]byte, error)
	Client(name string) (kubernetes.Interface, error)
	RequestContext(ctx context.Context) (context.Context, context.CancelFunc)
}

// clusterResource is a cluster as the API shows it (singlecloud's fields).
// Secrets never appear: the config's sshKey is dropped by the manager.
type clusterResource struct {
	resourceBase
	Name          string                    `json:"name"`
	Status        fsm.State                 `json:"status"`
	Imported      bool                      `json:"imported"`
	Reason        string                    `json:"reason,omitempty"`
	NodeCount     int                       `json:"nodeCount"`
	Version       string                    `json:"version,omitempty"`
	LastOperation *clustermanager.Operation `json:"lastOperation,omitempty"`
	*model.ClusterConfig
}

func clusterLinks(name string) map[string]string {
	self := apiPrefix + "/clusters/" + name
	return map[string]string{
		"self":        self,
		"collection":  apiPrefix + "/clusters",
		"nodes":       self + "/nodes",
		"namespaces":  self + "/namespaces",
		"kubeconfigs": self + "/kubeconfigs",
	}
}

func toClusterResource(c clustermanager.Cluster) clusterResource {
	r := clusterResource{
		resourceBase:  newResourceBase(c.Name, "cluster", clusterLinks(c.Name), c.CreatedAt),
		Name:          c.Name,
		Status:        c.Status,
		Imported:      c.Kind == clustermanager.KindImported,
		Reason:        c.Reason,
		NodeCount:     c.NodeCount,
		Version:       c.Version,
		LastOperation: c.LastOperation,
		ClusterConfig: c.Config,
	}
	if r.ClusterConfig != nil {
		cfg := *r.ClusterConfig
		cfg.Name = ""
		r.ClusterConfig = &cfg
	}
	return r
}

func (s *Server) registerClusterRoutes(api, ws *mux.Router) {
	api.Handle("/clusters", s.handle(s.listClusters)).Methods(http.MethodGet)
	api.Handle("/clusters", s.handle(s.postClusters)).Methods(http.MethodPost)
	api.Handle("/clusters/{cluster}", s.handle(s.getCluster)).Methods(http.MethodGet)
	api.Handle("/clusters/{cluster}", s.handle(s.postClusterAction)).Methods(http.MethodPost)
	api.Handle("/clusters/{cluster}", s.handle(s.updateCluster)).Methods(http.MethodPut)
	api.Handle("/clusters/{cluster}", s.handle(s.deleteCluster)).Methods(http.MethodDelete)
	s.registerKubeconfigRoutes(api)
	s.registerLiveRoutes(api)
}

func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) error {
	grants, err := s.grants(r)
	if err != nil {
		return err
	}
	onlyReady := r.URL.Query().Get("onlyready") == "true"
	all := s.opts.Clusters.List(onlyReady)
	items := make([][]byte, 0, len(all))
	for _, c := range all {
		if !grants.allows(c.Name) {
			continue
		}
		js, err := s.clusters.render(c)
		if err != nil {
			return err
		}
		items = append(items, js)
	}
	if !onlyReady {
		s.clusters.prune(all)
	}
	return writeRawCollection(w, "cluster", apiPrefix+"/clusters", items)
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["cluster"]
	if err := s.requireGrant(r, name); err != nil {
		return err
	}
	c, err := s.opts.Clusters.Get(name)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toClusterResource(c))
}

// postClusters creates (no action) or imports (?action=import) a cluster.
func (s *Server) postClusters(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "manage clusters"); err != nil {
		return err
	}
	switch action := r.URL.Query().Get("action"); action {
	case "import":
		var req model.ImportRequest
		if err := s.decodeBody(r, &req); err != nil {
			return err
		}
		c, err := s.opts.Clusters.Import(r.Context(), req)
		if err != nil {
			return err
		}
		return writeResource(w, http.StatusCreated, toClusterResource(c))
	case "":
		var cfg model.ClusterConfig
		if err := s.decodeBody(r, &cfg); err != nil {
			return err
		}
		cfg.ApplyDefaults()
		if err := validation.ValidateCreate(cfg); err != nil {
			return err
		}
		if _, err := s.opts.Clusters.Get(cfg.Name); err == nil {
			return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeDuplicateResource, Message: "cluster " + cfg.Name + " already exists"}
		}
		return &APIError{Status: http.StatusNotImplemented, Code: "NotImplemented", Message: "creating clusters needs the zke installer, which this build does not have yet; import an existing cluster with ?action=import"}
	default:
		return unknownAction(action)
	}
}

func (s *Server) postClusterAction(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "manage clusters"); err != nil {
		return err
	}
	name := mux.Vars(r)["cluster"]
	var (
		c   clustermanager.Cluster
		err error
	)
	switch action := r.URL.Query().Get("action"); action {
	case "cancel":
		c, err = s.opts.Clusters.Cancel(r.Context(), name)
	case "reconnect":
		var body struct {
			Kubeconfig string `json:"kubeconfig"`
		}
		if r.ContentLength != 0 {
			if err := s.decodeBody(r, &body); err != nil {
				return err
			}
		}
		c, err = s.opts.Clusters.Reconnect(r.Context(), name, body.Kubeconfig)
	default:
		return unknownAction(action)
	}
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toClusterResource(c))
}

func (s *Server) updateCluster(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "manage clusters"); err != nil {
		return err
	}
	name := mux.Vars(r)["cluster"]
	c, err := s.opts.Clusters.Get(name)
	if err != nil {
		return err
	}
	if c.Kind == clustermanager.KindImported {
		return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidOption, Message: "cluster " + name + " is imported: singlecloud does not change its nodes; use ?action=reconnect to give it a new kubeconfig"}
	}
	return &APIError{Status: http.StatusNotImplemented, Code: "NotImplemented", Message: "updating created clusters needs the zke installer, which this build does not have yet"}
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "manage clusters"); err != nil {
		return err
	}
	c, err := s.opts.Clusters.Delete(r.Context(), mux.Vars(r)["cluster"])
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusAccepted, toClusterResource(c))
}

// timeOrZero formats t for a resource, empty when unset.
func timeOrZero(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
