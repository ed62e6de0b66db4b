package applications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage"
)

// change is what a transition does to a record besides its phase.
type change struct {
	// edit changes the record (a new spec, the installed hash).
	edit func(*record)
	// message is the instance's new Message, and its log line.
	message string
	level   string
	actor   string
	// generation, when not 0, is the spec generation a handler acted on:
	// the transition is refused if the spec changed since.
	generation int64
}

// errRemoved says that an instance was purged or went with its
// environment while a request or handler still held it.
func errRemoved(key string) error {
	return fmt.Errorf("application %s was removed meanwhile: %w", key, ErrNotFound)
}

// putIfCurrent stores next in tx only if the stored record is still the
// one cur was read from (same LogSeq: every write advances it), or absent
// when cur is new: a write can never resurrect an instance that a purge or
// a cluster delete removed, nor overwrite a concurrent one.
func putIfCurrent(tx storage.Tx, key string, cur, next record) error {
	b, err := tx.Get(storage.BucketApplications, key)
	switch {
	case cur.Phase == PhaseNone && err == nil:
		return fmt.Errorf("application %s exists already: %w", key, ErrConflict)
	case cur.Phase == PhaseNone && errors.Is(err, storage.ErrNotFound):
	case errors.Is(err, storage.ErrNotFound):
		return errRemoved(key)
	case err != nil:
		return err
	default:
		var stored record
		if err := json.Unmarshal(b, &stored); err != nil {
			return fmt.Errorf("application %s: decode: %w", key, err)
		}
		if stored.LogSeq != cur.LogSeq {
			return fmt.Errorf("application %s changed meanwhile: %w", key, ErrConflict)
		}
	}
	nb, err := json.Marshal(next)
	if err != nil {
		return err
	}
	return tx.Put(storage.BucketApplications, key, nb)
}

// transition fires ev on inst: the new record and its log line are stored
// in one transaction before the phase moves in memory, and the move is
// then published on the bus. Refused events return a *PhaseError.
//
// Lock order: m.mu before inst.mu, never the reverse; so the environment is
// looked up before inst is locked.
func (m *Manager) transition(ctx context.Context, key string, inst *instance, ev event, ch change) error {
	env, _ := splitKey(key)
	view, err := m.Environment(env)
	onCluster := err == nil && view.Kind == model.EnvironmentKubernetes
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.removed {
		return errRemoved(key)
	}
	cur := inst.rec
	if ch.generation != 0 && ch.generation != cur.Generation {
		return &PhaseError{Instance: key, Event: string(ev), Phase: cur.Phase}
	}
	var saved record
	var line LogLine
	persist := func(to Phase) error {
		next := cur
		if ch.edit != nil {
			ch.edit(&next)
		}
		now := m.opts.Clock.Now().UTC()
		if to != cur.Phase || next.PhaseSince.IsZero() {
			next.PhaseSince = now
		}
		next.Phase, next.Message, next.UpdatedAt = to, ch.message, now
		if next.CreatedAt.IsZero() {
			next.CreatedAt = now
		}
		level := ch.level
		if level == "" {
			level = "info"
		}
		msg := fmt.Sprintf("%s: %s → %s", ev, displayPhase(cur.Phase), to)
		if ch.actor != "" {
			msg += " by " + ch.actor
		}
		if ch.message != "" {
			msg += ": " + ch.message
		}
		line = LogLine{Time: now, Phase: to, Level: level, Message: msg}
		err := m.opts.Store.Update(func(tx storage.Tx) error {
			if err := appendLog(tx, &next, line); err != nil {
				return err
			}
			return putIfCurrent(tx, key, cur, next)
		})
		if err != nil {
			return err
		}
		saved = next
		line.Seq = next.LogSeq
		return nil
	}
	announce := func(to Phase) {
		inst.rec = saved
		if to == PhaseWaiting {
			// A new spec, or a retry: the install applies again.
			inst.applied = 0
		}
		if to != cur.Phase {
			inst.progress = ""
		}
		m.publishLine(key, line, Settled(to))
		m.log.Info("application phase", "instance", key, "event", string(ev), "from", displayPhase(cur.Phase), "to", string(to), "message", ch.message)
		if m.opts.Bus == nil {
			return
		}
		e := pubsub.Event{Kind: pubsub.ApplicationPhaseChanged, Environment: saved.Env, Application: saved.App,
			Status: string(to), From: string(cur.Phase), Event: string(ev), Reason: ch.message}
		if onCluster {
			e.Cluster = saved.Env
		}
		m.opts.Bus.Publish(e)
	}
	return fire(ctx, key, cur.Phase, ev, persist, announce)
}

// note logs a line for inst without changing its phase: progress an
// install made, an error it will retry.
func (m *Manager) note(key string, inst *instance, level, msg string) {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.removed {
		return
	}
	cur := inst.rec
	next := cur
	line := LogLine{Time: m.opts.Clock.Now().UTC(), Phase: next.Phase, Level: level, Message: msg}
	err := m.opts.Store.Update(func(tx storage.Tx) error {
		if err := appendLog(tx, &next, line); err != nil {
			return err
		}
		return putIfCurrent(tx, key, cur, next)
	})
	if err != nil {
		m.log.Warn("application log", "instance", key, "error", err)
		return
	}
	inst.rec = next
	line.Seq = next.LogSeq
	m.publishLine(key, line, false)
}

func displayPhase(p Phase) string {
	if p == PhaseNone {
		return "(new)"
	}
	return string(p)
}
