package clustermanager

import (
	"context"
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
	state := e.machine.Current()
	switch state {
	case fsm.StateRunning, fsm.StateUnreachable, fsm.StateUnavailable:
	default:
		return Cluster{}, &fsm.TransitionError{Cluster: name, Event: "forget a pinned host key of", State: state}
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
	forgot, err := m.dropHostKey(e, address, state)
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
// reports whether there was one. It runs under e's write lock, so no
// operation can begin meanwhile (its transition is saved under the same
// lock), and refuses while one runs: the edit is made to the record as it
// is now, and the next operation starts from it. state is e's state for
// the refusal's message (the state machine is not consulted under the
// lock, which its transitions take inside their own).
func (m *Manager) dropHostKey(e *entry, address string, state fsm.State) (bool, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	e.mu.Lock()
	busy := e.op != nil
	e.mu.Unlock()
	if busy {
		return false, &fsm.TransitionError{Cluster: e.name, Event: "forget a pinned host key of", State: state}
	}
	st := e.record().secrets.ZKE
	if st == nil || st.HostKeys[address] == "" {
		return false, nil
	}
	next := st.Clone()
	delete(next.HostKeys, address)
	return true, m.writeInstallStateLocked(e, next, nil)
}
