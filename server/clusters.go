package server

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/certificates"
	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/snapshots"
)

// ClusterService is what the API needs of the cluster manager.
type ClusterService interface {
	ClusterReads
	Import(ctx context.Context, req model.ImportRequest) (clustermanager.Cluster, error)
	Reconnect(ctx context.Context, name, kubeconfig string) (clustermanager.Cluster, error)
	Create(ctx context.Context, cfg model.ClusterConfig) (clustermanager.Cluster, error)
	Update(ctx context.Context, name string, cfg model.ClusterConfig) (clustermanager.Cluster, error)
	Retry(ctx context.Context, name string) (clustermanager.Cluster, error)
	Delete(ctx context.Context, name string, force bool) (clustermanager.Cluster, error)
	Cancel(ctx context.Context, name string) (clustermanager.Cluster, error)
	ForgetHostKey(ctx context.Context, name, node string) (clustermanager.Cluster, error)
	RotateCertificates(ctx context.Context, name string, opts clustermanager.RotateOptions) (clustermanager.Cluster, error)
	Restore(ctx context.Context, name string, opts clustermanager.RestoreOptions) (clustermanager.Cluster, error)
	Revert(ctx context.Context, name string) (clustermanager.Cluster, error)
	Snapshots(name string) ([]snapshots.Meta, error)
	Snapshot(name, id string) (snapshots.Meta, error)
	TakeSnapshot(ctx context.Context, name string) (snapshots.Meta, error)
	OpenSnapshot(name, id string) (io.ReadCloser, snapshots.Meta, error)
	DeleteSnapshot(name, id string) error
	Client(name string) (kubeclient.Interface, error)
	RequestContext(ctx context.Context) (context.Context, context.CancelFunc)
}

// ClusterReads is the part of ClusterService that only reads: the cluster
// manager answers it from memory on the leader, clustermanager.Follower
// from the follower's copy of the store.
type ClusterReads interface {
	List(onlyReady bool) []clustermanager.Cluster
	Get(name string) (clustermanager.Cluster, error)
	Operations(name string) ([]clustermanager.Operation, error)
	Certificates(name string) ([]certificates.Certificate, error)
	FleetCertificates(within time.Duration) []clustermanager.ClusterCertificate
	Kubeconfig(name string) ([]byte, error)
	FollowLog(name string, since uint64) ([]clustermanager.Frame, <-chan clustermanager.Frame, func(), error)
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
	// CertificateWarning says which certificate expires first when that
	// is within 120, 30 or 7 days.
	CertificateWarning *certificates.Warning `json:"certificateWarning,omitempty"`
	// Actions are the requests the caller may make of the cluster now:
	// what its state machine and record allow, and nothing for a caller
	// who may not change clusters. Clients offer these and nothing else.
	Actions []clustermanager.Action `json:"actions"`
	*model.ClusterConfig
}

// clusterLinks are a cluster's links; admin adds singlecloud's "update"
// and "remove" links (PUT and DELETE on self), which only admins may use.
func clusterLinks(name string, admin bool) map[string]string {
	self := apiPrefix + "/clusters/" + name
	links := map[string]string{
		"self":        self,
		"collection":  apiPrefix + "/clusters",
		"nodes":       self + "/nodes",
		"namespaces":  self + "/namespaces",
		"kubeconfigs": self + "/kubeconfigs",
	}
	if admin {
		links["update"] = self
		links["remove"] = self
	}
	return links
}

// toClusterResource renders c for a caller who is the admin or not (the
// links differ).
func toClusterResource(c clustermanager.Cluster, admin bool) clusterResource {
	r := clusterResource{
		resourceBase:       newResourceBase(c.Name, "cluster", clusterLinks(c.Name, admin), c.CreatedAt),
		Name:               c.Name,
		Status:             c.Status,
		Imported:           c.Kind == clustermanager.KindImported,
		Reason:             c.Reason,
		NodeCount:          c.NodeCount,
		Version:            c.Version,
		LastOperation:      c.LastOperation,
		CertificateWarning: c.CertificateWarning,
		ClusterConfig:      c.Config,
		Actions:            []clustermanager.Action{},
	}
	if admin {
		r.Actions = c.Actions.List()
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
	api.Handle("/clusters/{cluster}/operations", s.handle(s.listOperations)).Methods(http.MethodGet)
	s.registerKubeconfigRoutes(api)
	s.registerLiveRoutes(api)
	s.registerZkelogRoutes(ws)
	s.registerCertificateRoutes(api)
	s.registerSnapshotRoutes(api)
}

// listClusters answers GET /clusters. Without list parameters it is the
// whole list, as singlecloud always answered it; the admin's is served
// from the body assembled for the current views. With limit, continue,
// sort, q or status (listQuery) it is one page of the filtered, sorted
// list, with "total" and, unless it is the last page, "continue". Either
// is gzipped for a client that accepts it. A non-admin sees only the
// clusters granted to them, and counts only those.
func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) error {
	query := r.URL.Query()
	lq, err := parseListQuery(query)
	if err != nil {
		return err
	}
	grants, err := s.grants(r)
	if err != nil {
		return err
	}
	_, admin := userFrom(r.Context())
	onlyReady := query.Get("onlyready") == "true"
	const self = apiPrefix + "/clusters"
	wholeList := !lq.set && admin && !onlyReady
	gen, generational := s.reads.(generational)
	var g uint64
	if generational {
		g, generational = gen.Generation() // not while a transition is under way
	}
	if generational {
		if f := s.clusters.current(g); wholeList && f != nil {
			// Nothing changed since this list was assembled: serve it
			// without listing a view.
			return writeJSONBody(w, r, f.body, func() []byte { return f.gzipped(s.clusters.gzip) })
		}
	}
	ticket := s.clusters.ticket()
	var all []clustermanager.Cluster
	if generational && !wholeList {
		all = s.clusters.listed(g, onlyReady, s.reads.List)
	} else {
		all = s.reads.List(onlyReady)
	}
	if !onlyReady {
		s.clusters.prune(all)
	}
	if wholeList {
		f, err := s.clusters.adminList(all, ticket, "cluster", self)
		if err != nil {
			return err
		}
		if generational {
			f.tag(g)
		}
		return writeJSONBody(w, r, f.body, func() []byte { return f.gzipped(s.clusters.gzip) })
	}
	var (
		page  = all
		extra *collectionExtra
	)
	if lq.set {
		p := lq.page(all, grants.allows)
		page, extra = p.items, &collectionExtra{Continue: p.next, Total: &p.total}
	}
	items := make([][]byte, 0, len(page))
	for _, c := range page {
		if !grants.allows(c.Name) {
			continue
		}
		js, err := s.clusters.render(c, admin)
		if err != nil {
			return err
		}
		items = append(items, js)
	}
	body, err := assembleCollection("cluster", self, items, extra)
	if err != nil {
		return err
	}
	return writeJSONBody(w, r, body, func() []byte { return s.clusters.gzip.bytes(body) })
}

func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["cluster"]
	if err := s.requireGrant(r, name); err != nil {
		return err
	}
	c, err := s.reads.Get(name)
	if err != nil {
		return err
	}
	_, admin := userFrom(r.Context())
	return writeResource(w, http.StatusOK, toClusterResource(c, admin))
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
		return writeResource(w, http.StatusCreated, toClusterResource(c, true))
	case "":
		cfg, err := s.decodeClusterBody(r, nil)
		if err != nil {
			return err
		}
		c, err := s.opts.Clusters.Create(r.Context(), cfg)
		if err != nil {
			return err
		}
		return writeResource(w, http.StatusCreated, toClusterResource(c, true))
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
	case "retry":
		c, err = s.opts.Clusters.Retry(r.Context(), name)
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
	case "forgetHostKey":
		var body struct {
			Node string `json:"node"`
		}
		if err := s.decodeBody(r, &body); err != nil {
			return err
		}
		c, err = s.opts.Clusters.ForgetHostKey(r.Context(), name, body.Node)
	case "rotateCertificates":
		var opts clustermanager.RotateOptions
		if r.ContentLength != 0 {
			if err := s.decodeBody(r, &opts); err != nil {
				return err
			}
		}
		c, err = s.opts.Clusters.RotateCertificates(r.Context(), name, opts)
	case "revert":
		c, err = s.opts.Clusters.Revert(r.Context(), name)
	case "restore":
		var opts clustermanager.RestoreOptions
		if err := s.decodeBody(r, &opts); err != nil {
			return err
		}
		c, err = s.opts.Clusters.Restore(r.Context(), name, opts)
	default:
		return unknownAction(action)
	}
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toClusterResource(c, true))
}

func (s *Server) updateCluster(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "manage clusters"); err != nil {
		return err
	}
	name := mux.Vars(r)["cluster"]
	current, err := s.opts.Clusters.Get(name)
	if err != nil {
		return err
	}
	cfg, err := s.decodeClusterBody(r, &current)
	if err != nil {
		return err
	}
	c, err := s.opts.Clusters.Update(r.Context(), name, cfg)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusOK, toClusterResource(c, true))
}

func (s *Server) deleteCluster(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "manage clusters"); err != nil {
		return err
	}
	force := r.URL.Query().Get("force") == "true"
	c, err := s.opts.Clusters.Delete(r.Context(), mux.Vars(r)["cluster"], force)
	if err != nil {
		return err
	}
	return writeResource(w, http.StatusAccepted, toClusterResource(c, true))
}
