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
	// A busy cluster refuses at once, without waiting for its worker;
	// the worker asks again (dropHostKey).
	if err := m.refuse(e, ActionForgetHostKey); err != nil {
		return Cluster{}, err
	}
	rec := e.record()
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
	var forgot bool
	err = m.queue.do(ctx, name, "forget host key", func(context.Context) error {
		var err error
		forgot, err = m.dropHostKey(e, address)
		return err
	})
	if errors.Is(err, fsm.ErrInvalidTransition) {
		return Cluster{}, err
	}
	if err != nil {
		return Cluster{}, fmt.Errorf("forget host key of %s in cluster %s: %w", node, name, err)
	}
	if forgot {
		m.log.Info("pinned ssh host key forgotten", "cluster", name, "node", node, "address", address)
	}
	return m.view(e), nil
}

// dropHostKey removes the pin of address from e's installer state and
// reports whether there was one. It runs on e's worker, so no operation
// runs meanwhile; the state machine says whether the cluster's state
// allows the edit (only settled ones do: an operation started later
// begins from the edited record).
func (m *Manager) dropHostKey(e *entry, address string) (bool, error) {
	if err := e.machine.CanEdit(fsm.EditForgetHostKey); err != nil {
		return false, err
	}
	forgot := false
	err := m.repo.edit(e, func(next *record) bool {
		st := next.secrets.ZKE
		if st == nil || st.HostKeys[address] == "" {
			return false
		}
		delete(st.HostKeys, address)
		forgot = true
		return true
	})
	return forgot, err
}
