package server

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/clustermanager"
)

// nodeResource is a Kubernetes node as singlecloud's API shows it.
type nodeResource struct {
	resourceBase
	Name                    string            `json:"name"`
	Address                 string            `json:"address"`
	Roles                   []string          `json:"roles"`
	Labels                  map[string]string `json:"labels,omitempty"`
	Status                  string            `json:"status"`
	Unschedulable           bool              `json:"unschedulable"`
	OperatingSystem         string            `json:"operatingSystem"`
	OperatingSystemImage    string            `json:"operatingSystemImage"`
	KernelVersion           string            `json:"kernelVersion"`
	ContainerRuntimeVersion string            `json:"containerRuntimeVersion"`
	KubeletVersion          string            `json:"kubeletVersion"`
	CPU                     int64             `json:"cpu"`
	Memory                  int64             `json:"memory"`
	Pod                     int64             `json:"pod"`
}

type namespaceResource struct {
	resourceBase
	Name   string `json:"name"`
	Status string `json:"status"`
}

func (s *Server) registerLiveRoutes(api *mux.Router) {
	api.Handle("/clusters/{cluster}/nodes", s.handle(s.listNodes)).Methods(http.MethodGet)
	api.Handle("/clusters/{cluster}/nodes/{node}", s.handle(s.getNode)).Methods(http.MethodGet)
	api.Handle("/clusters/{cluster}/namespaces", s.handle(s.listNamespaces)).Methods(http.MethodGet)
}

// liveError explains a failed live read: the cluster is known and ready,
// but its API server did not give an answer.
func liveError(cluster, what string, err error) error {
	if apierrors.IsNotFound(err) {
		return &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf("%s not found in cluster %s", what, cluster)}
	}
	return fmt.Errorf("read %s of cluster %s: %w: %w", what, cluster, clustermanager.ErrUnreachable, err)
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["cluster"]
	if err := s.requireGrant(r, name); err != nil {
		return err
	}
	client, err := s.opts.Clusters.Client(name)
	if err != nil {
		return err
	}
	ctx, cancel := s.opts.Clusters.RequestContext(r.Context())
	defer cancel()
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return liveError(name, "nodes", err)
	}
	data := make([]any, 0, len(list.Items))
	for i := range list.Items {
		data = append(data, toNodeResource(name, &list.Items[i]))
	}
	return writeCollection(w, "node", apiPrefix+"/clusters/"+name+"/nodes", data)
}

func (s *Server) getNode(w http.ResponseWriter, r *http.Request) error {
	name, node := mux.Vars(r)["cluster"], mux.Vars(r)["node"]
	if err := s.requireGrant(r, name); err != nil {
		return err
	}
	client, err := s.opts.Clusters.Client(name)
	if err != nil {
		return err
	}
	ctx, cancel := s.opts.Clusters.RequestContext(r.Context())
	defer cancel()
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return liveError(name, "node "+node, err)
	}
	return writeResource(w, http.StatusOK, toNodeResource(name, n))
}

// listNamespaces shows the namespaces of a cluster: all of them to the
// admin, to anyone else only those their projects grant.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["cluster"]
	g, err := s.requireGrants(r, name)
	if err != nil {
		return err
	}
	client, err := s.opts.Clusters.Client(name)
	if err != nil {
		return err
	}
	ctx, cancel := s.opts.Clusters.RequestContext(r.Context())
	defer cancel()
	list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return liveError(name, "namespaces", err)
	}
	base := apiPrefix + "/clusters/" + name + "/namespaces"
	data := make([]any, 0, len(list.Items))
	for _, ns := range list.Items {
		if !g.allowsNamespace(name, ns.Name) {
			continue
		}
		links := map[string]string{"self": base + "/" + ns.Name, "collection": base}
		data = append(data, namespaceResource{
			resourceBase: newResourceBase(ns.Name, "namespace", links, ns.CreationTimestamp.Time),
			Name:         ns.Name,
			Status:       string(ns.Status.Phase),
		})
	}
	return writeCollection(w, "namespace", base, data)
}

func toNodeResource(cluster string, n *corev1.Node) nodeResource {
	base := apiPrefix + "/clusters/" + cluster + "/nodes"
	links := map[string]string{"self": base + "/" + n.Name, "collection": base}
	res := nodeResource{
		resourceBase:            newResourceBase(n.Name, "node", links, n.CreationTimestamp.Time),
		Name:                    n.Name,
		Labels:                  n.Labels,
		Roles:                   []string{},
		Status:                  "NotReady",
		Unschedulable:           n.Spec.Unschedulable,
		OperatingSystem:         n.Status.NodeInfo.OperatingSystem,
		OperatingSystemImage:    n.Status.NodeInfo.OSImage,
		KernelVersion:           n.Status.NodeInfo.KernelVersion,
		ContainerRuntimeVersion: n.Status.NodeInfo.ContainerRuntimeVersion,
		KubeletVersion:          n.Status.NodeInfo.KubeletVersion,
		CPU:                     n.Status.Capacity.Cpu().MilliValue(),
		Memory:                  n.Status.Capacity.Memory().Value(),
		Pod:                     n.Status.Capacity.Pods().Value(),
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			res.Address = a.Address
			break
		}
	}
	for k := range n.Labels {
		if role, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && role != "" {
			res.Roles = append(res.Roles, role)
		}
	}
	sort.Strings(res.Roles)
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			res.Status = "Ready"
		}
	}
	return res
}
