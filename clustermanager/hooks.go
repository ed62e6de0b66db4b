package clustermanager

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage"
)

// change edits the record a transition is about to write. It is the
// payload of every Fire: the caller says what the transition means for the
// row; the hooks write it and only then let the state move.
type change func(r *record)

// hooks implements fsm.Hooks for every cluster of a Manager.
type hooks struct{ m *Manager }

// Persist writes the record as it will be after t. It runs under the
// fsm's lock, before the state moves; an error keeps the old state.
func (h *hooks) Persist(ctx context.Context, t fsm.Transition) error {
	m := h.m
	e, err := m.lookup(t.Cluster)
	if err != nil {
		return err
	}
	if t.To == fsm.StateDeleted {
		err := m.opts.Store.Update(func(tx storage.Tx) error {
			for _, b := range []storage.Bucket{storage.BucketClusters, storage.BucketCheckpoints} {
				if err := tx.Delete(b, t.Cluster); err != nil {
					return err
				}
			}
			if m.opts.OnDelete != nil {
				if err := m.opts.OnDelete(tx, t.Cluster); err != nil {
					return err
				}
			}
			return tx.DeletePrefix(storage.BucketOperationLogs, t.Cluster+"/")
		})
		if err != nil {
			return fmt.Errorf("delete cluster %s from the store: %w", t.Cluster, err)
		}
		return nil
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	next := e.record().clone()
	next.Status = t.To
	switch t.To {
	case fsm.StateUnavailable, fsm.StateCreating, fsm.StateUpdating:
		next.Unavailable = true
	case fsm.StateRunning, fsm.StateConnecting:
		next.Unavailable = false
	}
	if t.To == fsm.StateRunning {
		next.Reason = ""
	}
	if c, ok := t.Payload.(change); ok && c != nil {
		c(next)
	}
	if err := m.putRecordLocked(e, next, nil); err != nil {
		return fmt.Errorf("%s → %s: %w", t.From, t.To, err)
	}
	return nil
}

// Announce moves the cluster between the ready and unready lists and
// publishes what happened. It runs after the state moved.
func (h *hooks) Announce(t fsm.Transition) {
	m := h.m
	m.mu.Lock()
	e := m.all[t.Cluster]
	if e != nil {
		m.placeLocked(e, t.To)
	}
	m.mu.Unlock()

	var rec *record
	if e != nil {
		rec = e.record()
	}
	m.logTransition(t, rec)
	now := m.opts.Clock().UTC()
	ev := pubsub.Event{Cluster: t.Cluster, Status: string(t.To), From: string(t.From), Event: string(t.Event), Time: now}
	if e != nil && t.To != fsm.StateDeleted {
		ev.Reason = e.record().Reason
	}
	switch {
	case t.To == fsm.StateDeleted:
		ev.Kind = pubsub.ClusterDeleted
		ev.Status = ""
	case t.To == fsm.StateRunning && !t.From.Ready():
		ev.Kind = pubsub.ClusterCreated
	case t.From.Ready() && !t.To.Ready():
		// Leaving the ready list: consumers of the ready set drop it.
		m.opts.Bus.Publish(pubsub.Event{Kind: pubsub.ClusterDeleted, Cluster: t.Cluster, Status: string(t.To), From: string(t.From), Event: string(t.Event), Time: now})
		ev.Kind = pubsub.ClusterStatusChanged
	default:
		ev.Kind = pubsub.ClusterStatusChanged
	}
	m.opts.Bus.Publish(ev)
}
