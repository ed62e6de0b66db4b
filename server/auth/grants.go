package auth

import (
	"encoding/json"
	"fmt"

	"github.com/zdnscloud/singlecloud/storage"
)

// The namespace values of a Project that grant every namespace of its
// cluster: empty, and the two spellings singlecloud's clients send
// (`_all` by older ones).
const (
	NamespaceAll       = "_all_namespaces"
	NamespaceAllLegacy = "_all"
)

// AllNamespaces reports whether p grants every namespace of its cluster.
func (p Project) AllNamespaces() bool {
	return p.Namespace == "" || p.Namespace == NamespaceAll || p.Namespace == NamespaceAllLegacy
}

// DropClusterGrants removes every user's projects on cluster, in tx: the
// cluster manager runs it in the transaction that deletes the cluster
// (clustermanager.Options.OnDelete), so the grants go exactly when the
// cluster does, and a crash never leaves one behind to apply to the next
// cluster of that name.
func (u *Users) DropClusterGrants(tx storage.Tx, cluster string) error {
	_, err := dropProjects(tx, func(p Project) bool { return p.Cluster != cluster })
	if err != nil {
		return fmt.Errorf("drop grants to cluster %s: %w", cluster, err)
	}
	return nil
}

// PruneGrants removes every project naming a cluster for which exists
// reports false, in one transaction, and returns how many it removed. Run
// at start-up, it drops grants left by releases that kept them after a
// delete, and the rare grant whose cluster was deleted while the request
// giving it was being served (the API refuses grants to clusters that do
// not exist, so no other grant can name a missing cluster).
func (u *Users) PruneGrants(exists func(cluster string) bool) (int, error) {
	known := map[string]bool{}
	keep := func(p Project) bool {
		ok, seen := known[p.Cluster]
		if !seen {
			ok = exists(p.Cluster)
			known[p.Cluster] = ok
		}
		return ok
	}
	var n int
	err := u.store.Update(func(tx storage.Tx) error {
		var err error
		n, err = dropProjects(tx, keep)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune grants to missing clusters: %w", err)
	}
	return n, nil
}

// dropProjects rewrites every user row that has projects keep refuses,
// without them, and returns how many projects it removed. It edits the
// stored form only: the sealed token stamp stays as it is.
func dropProjects(tx storage.Tx, keep func(Project) bool) (int, error) {
	kvs, err := tx.List(storage.BucketUsers)
	if err != nil {
		return 0, fmt.Errorf("list users: %w", err)
	}
	removed := 0
	for _, kv := range kvs {
		var d diskRecord
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			return 0, fmt.Errorf("user %s: stored record is corrupt: %w", kv.Key, err)
		}
		kept := make([]Project, 0, len(d.Projects))
		for _, p := range d.Projects {
			if keep(p) {
				kept = append(kept, p)
			}
		}
		if len(kept) == len(d.Projects) {
			continue
		}
		removed += len(d.Projects) - len(kept)
		d.Projects = kept
		b, err := json.Marshal(d)
		if err != nil {
			return 0, fmt.Errorf("encode user %s: %w", kv.Key, err)
		}
		if err := tx.Put(storage.BucketUsers, kv.Key, b); err != nil {
			return 0, fmt.Errorf("save user %s: %w", kv.Key, err)
		}
	}
	return removed, nil
}
