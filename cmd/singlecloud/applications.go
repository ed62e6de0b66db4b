package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/zdnscloud/singlecloud/applications"
	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
	dockerop "github.com/zdnscloud/singlecloud/operators/docker"
	kubeop "github.com/zdnscloud/singlecloud/operators/kubernetes"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage"
)

// clusterEnvironments shows the clusters (the cluster manager, or a
// follower's view of the stored clusters) to the application manager:
// every ready cluster is an environment of kind kubernetes.
type clusterEnvironments struct{ mgr clusterLister }

// clusterLister is what clusterEnvironments reads of the clusters.
type clusterLister interface {
	Get(name string) (clustermanager.Cluster, error)
	List(onlyReady bool) []clustermanager.Cluster
}

func (c clusterEnvironments) ClusterState(name string) (exists, ready bool) {
	cl, err := c.mgr.Get(name)
	if err != nil {
		return false, false
	}
	return true, cl.Status.Ready()
}

func (c clusterEnvironments) ReadyClusters() []string {
	list := c.mgr.List(true)
	out := make([]string, 0, len(list))
	for _, cl := range list {
		out = append(out, cl.Name)
	}
	return out
}

// clusterClient returns a cluster's client for its operator, its errors
// classified for the application manager: a cluster that is not ready
// makes work wait, one that is gone fails it.
func clusterClient(mgr *clustermanager.Manager, name string) func() (kubeclient.Interface, error) {
	return func() (kubeclient.Interface, error) {
		c, err := mgr.Client(name)
		switch {
		case err == nil:
			return c, nil
		case errors.Is(err, clustermanager.ErrNotReady):
			return nil, fmt.Errorf("%w: %w", operators.ErrEnvironmentNotReady, err)
		case errors.Is(err, clustermanager.ErrNotFound):
			return nil, fmt.Errorf("%w: %w", operators.ErrEnvironmentGone, err)
		default:
			return nil, err
		}
	}
}

// newApplications builds the application-instance manager with an
// operator per environment kind (seed 001's factory).
func newApplications(db storage.Store, bus *pubsub.Bus, mgr *clustermanager.Manager, hostMgr *hosts.Manager, log *slog.Logger) (*applications.Manager, error) {
	factory := operators.Factory{
		model.EnvironmentKubernetes: func(env model.Environment, _ operators.Desired) (operators.Operator, error) {
			return kubeop.New(env.Name, clusterClient(mgr, env.Name), kubeop.Options{}), nil
		},
		model.EnvironmentHosts: func(env model.Environment, desired operators.Desired) (operators.Operator, error) {
			return dockerop.New(env, hostMgr, dockerop.Desired(desired), dockerop.Options{}), nil
		},
	}
	return applications.New(applications.Options{
		Store:     db,
		Bus:       bus,
		Operators: operators.NewRegistry(factory),
		Clusters:  clusterEnvironments{mgr: mgr},
		Logger:    log,
	})
}
