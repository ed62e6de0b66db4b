package clustermanager

import (
	"context"
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/validation"
)

// ForgetHostKey drops the SSH host key pinned for one node of a created
// cluster, so that the next operation records the key the node presents
// then. It is how an admin answers a host key mismatch after checking
// that the node was really reinstalled or had its keys regenerated: until
// then zke refuses to talk to the node. Only a cluster with no operation
// running can be changed (Running, Unreachable or Unavailable); the
// cluster's state does not change.
func (m *Manager) ForgetHostKey(ctx context.Context, name, node string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	rec := e.record()
	if rec.Kind != KindCreated {
		return Cluster{}, validation.Errors{{Field: "node", Reason: fmt.Sprintf("cluster %s was imported: singlecloud never connects to its hosts over SSH", name)}}
	}
	if node == "" {
		return Cluster{}, validation.Errors{{Field: "node", Reason: "is required: the name of the node whose pinned host key to forget"}}
	}
	address := ""
	if rec.Config != nil {
		for _, n := range rec.Config.Nodes {
			if n.Name == node {
				address = n.Address
			}
		}
	}
	if address == "" {
		return Cluster{}, validation.Errors{{Field: "node", Reason: fmt.Sprintf("cluster %s has no node named %q", name, node)}}
	}
	forgot, err := m.dropHostKey(e, address)
	if errors.Is(err, fsm.ErrInvalidTransition) {
		return Cluster{}, err
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("forget host key of %s in cluster %s: %w", node, name, err)
	}
	if !forgot {
		return m.view(e), nil
	}
	m.log.Info("pinned ssh host key forgotten", "cluster", name, "node", node, "address", address)
	return m.view(e), nil
}

// dropHostKey removes the pin of address from e's installer state and
// reports whether there was one. It runs under e's write lock, which every
// transition's save also takes, and asks the state of the record saved last
// (not the machine, whose lock is taken before the write lock): only a
// settled cluster is changed, so no operation runs whose checkpoints could
// overwrite the edit, and an operation that begins after it starts from the
// edited record. A finished operation whose goroutine has not yet returned
// does not count: its last write was the transition into the settled state.
func (m *Manager) dropHostKey(e *entry, address string) (bool, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	rec := e.record()
	if !rec.Status.Settled() {
		return false, &fsm.TransitionError{Cluster: e.name, Event: "forget a pinned host key of", State: rec.Status}
	}
	st := rec.secrets.ZKE
	if st == nil || st.HostKeys[address] == "" {
		return false, nil
	}
	next := st.Clone()
	delete(next.HostKeys, address)
	return true, m.writeInstallStateLocked(e, next, nil)
}
