package applications

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/zdnscloud/singlecloud/storage"
)

// Reads answers the application manager's reads from the stored rows
// alone: a replica that does not lead serves them from its own copy of
// the store (issue 12). It shows what the rows say; the progress an
// install is seeing lives only in the leader's memory.
type Reads struct {
	store    storage.Reader
	clusters Clusters
}

// NewReads returns the Reads of store, with clusters as the kubernetes
// environments.
func NewReads(store storage.Reader, clusters Clusters) *Reads {
	return &Reads{store: store, clusters: clusters}
}

// Environments returns every environment, as Manager.Environments does.
func (r *Reads) Environments() []EnvironmentView {
	rows, err := r.store.List(storage.BucketEnvironments)
	if err != nil {
		return nil
	}
	out := make([]EnvironmentView, 0, len(rows))
	taken := make(map[string]bool, len(rows))
	for _, kv := range rows {
		var rec envRecord
		if json.Unmarshal(kv.Value, &rec) == nil {
			out = append(out, rec.view())
			taken[kv.Key] = true
		}
	}
	out = appendClusterEnvironments(out, taken, r.clusters)
	return out
}

// Environment returns the named environment, as Manager.Environment does.
func (r *Reads) Environment(name string) (EnvironmentView, error) {
	b, err := r.store.Get(storage.BucketEnvironments, name)
	if err == nil {
		var rec envRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			return EnvironmentView{}, fmt.Errorf("environment %s: %w", name, err)
		}
		return rec.view(), nil
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return EnvironmentView{}, fmt.Errorf("environment %s: %w", name, err)
	}
	return clusterEnvironment(name, r.clusters)
}

// List returns env's application instances, sorted by name.
func (r *Reads) List(env string) ([]Instance, error) {
	rows, err := r.store.ListPrefix(storage.BucketApplications, env+"/")
	if err != nil {
		return nil, fmt.Errorf("environment %s: read its applications: %w", env, err)
	}
	if _, err := r.Environment(env); err != nil && len(rows) == 0 {
		return nil, err
	}
	out := make([]Instance, 0, len(rows))
	for _, kv := range rows {
		var rec record
		if json.Unmarshal(kv.Value, &rec) == nil {
			out = append(out, rec.view(""))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Get returns env's app.
func (r *Reads) Get(env, app string) (Instance, error) {
	b, err := r.store.Get(storage.BucketApplications, instanceKey(env, app))
	if errors.Is(err, storage.ErrNotFound) {
		return Instance{}, fmt.Errorf("application %s in environment %s: %w", app, env, ErrNotFound)
	}
	if err != nil {
		return Instance{}, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Instance{}, fmt.Errorf("application %s in environment %s: %w", app, env, err)
	}
	return rec.view(""), nil
}

// Log returns env's app's stored log lines after since.
func (r *Reads) Log(env, app string, since uint64) ([]LogLine, error) {
	if _, err := r.Get(env, app); err != nil {
		return nil, err
	}
	return readLog(r.store, env, app, since)
}
