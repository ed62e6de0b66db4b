package applications

import (
	"context"
	"errors"
	"fmt"
	"sync"

	looplab "github.com/looplab/fsm"
)

// event is what moves an instance between phases.
type event string

// The events of the phase table.
const (
	// evApply: a new or changed spec (or the same spec after a failure).
	evApply event = "apply"
	// evInstall: a worker takes a Waiting instance.
	evInstall event = "install"
	// evInstalled: every desired replica is ready.
	evInstalled event = "installed"
	// evInstallFailed: an install could not finish within its bound, or
	// was refused.
	evInstallFailed event = "installFailed"
	// evUninstallFailed: an uninstall could not finish within its bound.
	// A separate event from evInstallFailed, so that an install's stale
	// failure cannot override an admin's uninstall.
	evUninstallFailed event = "uninstallFailed"
	// evRetry: an admin asks a Failed instance to be installed again.
	evRetry event = "retry"
	// evUninstall: an admin deletes the instance.
	evUninstall event = "uninstall"
	// evUninstalled: everything the instance owned is gone.
	evUninstalled event = "uninstalled"
	// evForget: an admin forgets an Uninstalled instance (its record and
	// log go; so do an environment's when it is deleted).
	evForget event = "forget"
)

// phaseRule is one row of the table: ev moves an instance from any of
// Sources to Dst.
type phaseRule struct {
	Event   event
	Sources []Phase
	Dst     Phase
}

// phaseTable is the instance state machine (seed 000): the only vocabulary
// for "may I".
func phaseTable() []phaseRule {
	return []phaseRule{
		{evApply, []Phase{PhaseNone, PhaseWaiting, PhaseInstalling, PhaseInstalled, PhaseFailed, PhaseUninstalled}, PhaseWaiting},
		{evInstall, []Phase{PhaseWaiting}, PhaseInstalling},
		{evInstalled, []Phase{PhaseInstalling}, PhaseInstalled},
		{evInstallFailed, []Phase{PhaseInstalling}, PhaseFailed},
		{evUninstallFailed, []Phase{PhaseUninstalling}, PhaseFailed},
		{evRetry, []Phase{PhaseFailed}, PhaseWaiting},
		{evUninstall, []Phase{PhaseWaiting, PhaseInstalling, PhaseInstalled, PhaseFailed}, PhaseUninstalling},
		{evUninstalled, []Phase{PhaseUninstalling}, PhaseUninstalled},
		{evForget, []Phase{PhaseUninstalled}, PhaseNone},
	}
}

// pursues reports whether an instance in phase p is working toward its
// spec or holds it (Waiting, Installing, Installed): applying the same spec
// again then has nothing to add.
func pursues(p Phase) bool {
	return p == PhaseWaiting || p == PhaseInstalling || p == PhaseInstalled
}

// noneName is looplab's name for PhaseNone (looplab treats "" as every
// state in its callbacks' keys).
const noneName = "(none)"

var looplabEvents = sync.OnceValue(func() looplab.Events {
	var evs looplab.Events
	for _, r := range phaseTable() {
		d := looplab.EventDesc{Name: string(r.Event), Dst: toLooplab(r.Dst)}
		for _, s := range r.Sources {
			d.Src = append(d.Src, toLooplab(s))
		}
		evs = append(evs, d)
	}
	return evs
})

func toLooplab(p Phase) string {
	if p == PhaseNone {
		return noneName
	}
	return string(p)
}

func fromLooplab(s string) Phase {
	if s == noneName {
		return PhaseNone
	}
	return Phase(s)
}

// PhaseError says that an instance's phase refuses an event: the caller
// asked for something the phase does not allow.
type PhaseError struct {
	Instance string
	Event    string
	Phase    Phase
}

func (e *PhaseError) Error() string {
	return fmt.Sprintf("application %s is %s: it cannot %s now", e.Instance, e.Phase, e.Event)
}

// Unwrap makes a PhaseError an ErrConflict.
func (e *PhaseError) Unwrap() error { return ErrConflict }

// can reports whether ev is allowed in phase p, and where it leads.
func can(p Phase, ev event) (Phase, bool) {
	for _, r := range phaseTable() {
		if r.Event != ev {
			continue
		}
		for _, s := range r.Sources {
			if s == p {
				return r.Dst, true
			}
		}
	}
	return "", false
}

// fire moves cur by ev on a looplab machine: persist runs before the phase
// moves and may refuse it; announce runs after. An event that leaves the
// phase where it is (apply while Waiting) runs persist and announce without
// a move, so that the new spec is stored all the same.
func fire(ctx context.Context, key string, cur Phase, ev event, persist func(to Phase) error, announce func(to Phase)) error {
	to, ok := can(cur, ev)
	if !ok {
		return &PhaseError{Instance: key, Event: string(ev), Phase: cur}
	}
	if to == cur {
		if err := persist(to); err != nil {
			return err
		}
		announce(to)
		return nil
	}
	var saveErr error
	f := looplab.NewFSM(toLooplab(cur), looplabEvents(), looplab.Callbacks{
		"leave_state": func(_ context.Context, e *looplab.Event) {
			if err := persist(fromLooplab(e.Dst)); err != nil {
				saveErr = err
				e.Cancel(err)
			}
		},
		"enter_state": func(_ context.Context, e *looplab.Event) { announce(fromLooplab(e.Dst)) },
	})
	err := f.Event(context.WithoutCancel(ctx), string(ev))
	var canceled looplab.CanceledError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &canceled) && saveErr != nil:
		return fmt.Errorf("application %s: save %s to %s: %w", key, cur, to, saveErr)
	default:
		return fmt.Errorf("application %s: %s: %w", key, ev, err)
	}
}
