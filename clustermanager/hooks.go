package clustermanager

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/pubsub"
)

// hooks implements fsm.Hooks for every cluster of a Manager.
type hooks struct{ m *Manager }

// Persist writes the record as it will be after t, through the
// repository. It runs under the fsm's lock, before the state moves; an
// error keeps the old state.
func (h *hooks) Persist(_ context.Context, t fsm.Transition[change]) error {
	// Counted before anything of it shows; Announce (or the failure
	// here) uncounts it: lists taken meanwhile are not kept (Generation).
	h.m.beginTransition()
	e, err := h.m.lookup(t.Cluster)
	if err != nil {
		h.m.abortTransition()
		return err
	}
	if err := h.m.repo.saveTransition(e, t.To, t.Payload); err != nil {
		h.m.abortTransition()
		return fmt.Errorf("%s → %s: %w", t.From, t.To, err)
	}
	return nil
}

// Announce moves the cluster between the ready and unready lists, logs
// the transition and publishes it (after the result frame, when an
// operation is ending: see conclude). It runs after the state moved.
func (h *hooks) Announce(t fsm.Transition[change]) {
	m := h.m
	m.mu.Lock()
	e := m.all[t.Cluster]
	if e != nil {
		m.placeLocked(e, t.To)
	}
	// The state has moved (Announce runs after it): lists taken from now
	// on show it.
	m.endTransition()
	m.mu.Unlock()
	if e == nil {
		return
	}
	rec := e.record()
	m.logTransition(t)
	now := m.opts.Clock().UTC()
	ev := pubsub.Event{Cluster: t.Cluster, Status: string(t.To), From: string(t.From), Event: string(t.Event), Time: now}
	if t.To != fsm.StateDeleted {
		ev.Reason = rec.Reason
	}
	var evs []pubsub.Event
	switch {
	case t.To == fsm.StateDeleted:
		ev.Kind = pubsub.ClusterDeleted
		ev.Status = ""
	case t.To == fsm.StateRunning && !t.From.Ready():
		ev.Kind = pubsub.ClusterCreated
	case t.From.Ready() && !t.To.Ready():
		// Leaving the ready list: consumers of the ready set drop it.
		evs = append(evs, pubsub.Event{Kind: pubsub.ClusterDeleted, Cluster: t.Cluster, Status: string(t.To), From: string(t.From), Event: string(t.Event), Time: now})
		ev.Kind = pubsub.ClusterStatusChanged
	default:
		ev.Kind = pubsub.ClusterStatusChanged
	}
	e.publish(m.opts.Bus, append(evs, ev)...)
}
