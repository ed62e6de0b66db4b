package applications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/validation"
)

// Clusters is what the manager needs of the cluster manager: which
// clusters exist and which are ready. Every ready cluster is an
// environment of kind kubernetes, named after it.
type Clusters interface {
	// ClusterState reports whether the named cluster exists and whether
	// it is ready (Running or Unreachable).
	ClusterState(name string) (exists, ready bool)
	// ReadyClusters returns the names of the ready clusters.
	ReadyClusters() []string
}

// EnvironmentView is an environment as the API shows it.
type EnvironmentView struct {
	model.Environment
	// Ready: a cluster that is ready; an environment of hosts always is
	// (its members are chosen at each act).
	Ready     bool       `json:"ready"`
	CreatedBy string     `json:"createdBy,omitempty"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
}

// envRecord is an environment of hosts as stored in BucketEnvironments.
type envRecord struct {
	model.Environment
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
}

func (r envRecord) view() EnvironmentView {
	at := r.CreatedAt
	return EnvironmentView{Environment: r.Environment, Ready: true, CreatedBy: r.CreatedBy, CreatedAt: &at}
}

// Environments returns every environment: the environments of hosts, then
// a kubernetes environment per ready cluster whose name no environment of
// hosts takes; sorted by name.
func (m *Manager) Environments() []EnvironmentView {
	m.mu.Lock()
	out := make([]EnvironmentView, 0, len(m.envs))
	for _, r := range m.envs {
		out = append(out, r.view())
	}
	taken := make(map[string]bool, len(m.envs))
	for n := range m.envs {
		taken[n] = true
	}
	m.mu.Unlock()
	return appendClusterEnvironments(out, taken, m.opts.Clusters)
}

// appendClusterEnvironments appends to out a kubernetes environment per
// ready cluster whose name is not taken, and sorts out by name.
func appendClusterEnvironments(out []EnvironmentView, taken map[string]bool, clusters Clusters) []EnvironmentView {
	for _, c := range clusters.ReadyClusters() {
		if !taken[c] {
			out = append(out, EnvironmentView{Environment: model.Environment{Name: c, Kind: model.EnvironmentKubernetes}, Ready: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Environment returns the named environment: an environment of hosts, or
// else the cluster of that name (ready or not).
func (m *Manager) Environment(name string) (EnvironmentView, error) {
	m.mu.Lock()
	r, ok := m.envs[name]
	m.mu.Unlock()
	if ok {
		return r.view(), nil
	}
	return clusterEnvironment(name, m.opts.Clusters)
}

// clusterEnvironment is the kubernetes environment of the cluster name
// (ready or not), or ErrNotFound.
func clusterEnvironment(name string, clusters Clusters) (EnvironmentView, error) {
	if exists, ready := clusters.ClusterState(name); exists {
		return EnvironmentView{Environment: model.Environment{Name: name, Kind: model.EnvironmentKubernetes}, Ready: ready}, nil
	}
	return EnvironmentView{}, fmt.Errorf("environment %s: %w", name, ErrNotFound)
}

// CreateEnvironment stores a new environment of hosts. Its name may not be
// a cluster's or another environment's.
func (m *Manager) CreateEnvironment(_ context.Context, actor string, env model.Environment) (EnvironmentView, error) {
	if err := validation.ValidateEnvironment(env); err != nil {
		return EnvironmentView{}, err
	}
	if exists, _ := m.opts.Clusters.ClusterState(env.Name); exists {
		return EnvironmentView{}, fmt.Errorf("environment %s: cluster %s is an environment of that name already; choose another name: %w", env.Name, env.Name, ErrDuplicate)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.envs[env.Name]; dup {
		return EnvironmentView{}, fmt.Errorf("environment %s exists already: %w", env.Name, ErrDuplicate)
	}
	r := envRecord{Environment: model.Environment{Name: env.Name, Kind: env.Kind, Selector: env.Selector}, CreatedBy: actor, CreatedAt: m.opts.Clock.Now().UTC()}
	b, err := json.Marshal(r)
	if err != nil {
		return EnvironmentView{}, err
	}
	if err := m.opts.Store.Put(storage.BucketEnvironments, env.Name, b); err != nil {
		return EnvironmentView{}, fmt.Errorf("environment %s: save: %w", env.Name, err)
	}
	m.envs[env.Name] = r
	m.log.Info("environment created", "environment", env.Name, "kind", env.Kind, "selector", env.Selector, "by", actor)
	return r.view(), nil
}

// DeleteEnvironment removes an environment of hosts. It refuses while an
// application instance there is not Uninstalled (checked inside the
// deleting transaction, against the stored phases); the Uninstalled ones
// and their logs go with it.
func (m *Manager) DeleteEnvironment(_ context.Context, actor, name string) error {
	m.mu.Lock()
	_, ok := m.envs[name]
	m.mu.Unlock()
	if !ok {
		if exists, _ := m.opts.Clusters.ClusterState(name); exists {
			return fmt.Errorf("environment %s is cluster %s: delete the cluster instead: %w", name, name, ErrConflict)
		}
		return fmt.Errorf("environment %s: %w", name, ErrNotFound)
	}
	var gone []string
	err := m.opts.Store.Update(func(tx storage.Tx) error {
		kvs, err := tx.ListPrefix(storage.BucketApplications, name+"/")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			if err := forgettable(tx, kv.Key); err != nil {
				_, app := splitKey(kv.Key)
				return fmt.Errorf("environment %s holds application %s: uninstall it first: %w", name, app, err)
			}
			gone = append(gone, kv.Key)
		}
		if err := tx.DeletePrefix(storage.BucketApplications, name+"/"); err != nil {
			return err
		}
		if err := tx.DeletePrefix(storage.BucketApplicationLogs, name+"/"); err != nil {
			return err
		}
		return tx.Delete(storage.BucketEnvironments, name)
	})
	if err != nil {
		return fmt.Errorf("environment %s: delete: %w", name, err)
	}
	m.mu.Lock()
	for _, key := range gone {
		m.forgetLocked(key)
	}
	delete(m.envs, name)
	m.mu.Unlock()
	m.opts.Operators.Forget(name)
	m.log.Info("environment deleted", "environment", name, "by", actor)
	return nil
}

// DropClusterInstances runs inside the transaction that removes a deleted
// cluster (clustermanager's OnDelete): the cluster's application instances
// and their logs go with it, since everything they ran there is gone. It
// takes no lock of the manager (the store's writer is held): the instances
// leave memory when the cluster's deletion is announced (forgetCluster).
// An environment of hosts of the same name keeps its instances.
func DropClusterInstances(tx storage.Tx, cluster string) error {
	if _, err := tx.Get(storage.BucketEnvironments, cluster); err == nil {
		return nil
	}
	if err := tx.DeletePrefix(storage.BucketApplications, cluster+"/"); err != nil {
		return err
	}
	return tx.DeletePrefix(storage.BucketApplicationLogs, cluster+"/")
}

// forgetCluster drops from memory the instances of a cluster that no
// longer exists and whose rows are gone (DropClusterInstances). It runs on
// every ClusterDeleted event and at every resync, so a missed event only
// delays it.
func (m *Manager) forgetCluster(cluster string) {
	if exists, _ := m.opts.Clusters.ClusterState(cluster); exists {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.envs[cluster]; ok {
		return
	}
	for key := range m.instances {
		if env, _ := splitKey(key); env != cluster {
			continue
		}
		if _, err := m.opts.Store.Get(storage.BucketApplications, key); errors.Is(err, storage.ErrNotFound) {
			m.forgetLocked(key)
		}
	}
}
