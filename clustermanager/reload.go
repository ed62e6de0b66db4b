package clustermanager

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
)

// Load reads every stored cluster into memory (SPEC §5) and starts the
// work each one needs: a connector for clusters that were usable, the rest
// of an interrupted delete. No row is ever skipped: a row that cannot be
// decoded is still listed, as Unavailable with the reason. Load returns
// once every cluster is listed, before any is reachable; call it once,
// before serving.
//
// At the first start with row-bound seals (storage.SettingClusterSecretsBound
// unset), the rows whose secrets an older singlecloud sealed unbound are
// re-sealed bound, and the setting is set, in one transaction that also
// reads the rows for loading, before any operation starts; from then on
// such secrets are refused (decodeRecord).
func (m *Manager) Load(ctx context.Context) (int, error) {
	rows, resealed, err := m.repo.loadAll()
	if err != nil {
		return 0, fmt.Errorf("load clusters: %w", err)
	}
	if resealed > 0 {
		m.log.Info("re-sealed cluster secrets bound to their rows", "clusters", resealed)
	}
	m.eta.load(m.opts.Store)
	for _, row := range rows {
		m.restore(row.rec, row.err)
	}
	return len(rows), nil
}

// restore puts one stored cluster back in memory in the state its record
// implies and queues the work it needs: a connector for clusters that were
// usable, the rest of an interrupted create, update or delete.
//
// It writes nothing, so that a reload of thousands of rows stays fast.
// Memory may then hold a state the row does not (Connecting for a Running
// row; Unavailable for a Canceling one, with an in-memory reason): that
// state is a pure function of the row (restoredState), so a crash before
// the cluster's next write derives the same state again, and the next
// transition writes it. Nothing acknowledged is lost: the row is only
// ever behind by what reload derived from it.
func (m *Manager) restore(rec *record, decodeErr error) {
	state, resume := restoredState(rec, decodeErr)
	if decodeErr != nil {
		rec.Reason = fmt.Sprintf("stored record is damaged (%v); delete the cluster and import or create it again", decodeErr)
	} else if rec.Status != state && state == fsm.StateUnavailable && rec.Reason == "" {
		rec.Reason = fmt.Sprintf("singlecloud stopped while the cluster was %s; retry the operation", rec.Status)
	}
	e, err := m.reserve(rec.Name, state, rec)
	if err != nil {
		m.log.Error("reload: duplicate cluster row", "cluster", rec.Name, "err", err)
		return
	}
	m.holdRestoring(rec)
	if resume == "" {
		if rec.LastOperation.running() && decodeErr == nil {
			m.endInterrupted(e, state)
		}
		return
	}
	k, err := opKindOf(resume)
	if err != nil {
		m.log.Error("reload: operation not resumed", "cluster", rec.Name, "err", err)
		return
	}
	if err := m.enqueueRun(e, k, false, false, true); err != nil {
		m.log.Warn("reload: operation not resumed", "cluster", rec.Name, "operation", string(resume), "err", err)
	}
}

// restoredState maps a stored record to the state it restarts in and the
// operation to resume ("" for none). A cancel that a crash interrupted
// ends Unavailable: the worker it waited for is gone.
func restoredState(rec *record, decodeErr error) (fsm.State, OperationType) {
	switch {
	case decodeErr != nil:
		return fsm.StateUnavailable, ""
	case rec.Status == fsm.StateDeleting:
		return fsm.StateDeleting, OpDelete
	case rec.Kind == KindCreated && rec.Status == fsm.StateCreating:
		// An install that a crash interrupted resumes from its last
		// checkpoint, skipping the steps it can verify.
		return rec.Status, OpCreate
	case rec.Kind == KindCreated && rec.Status == fsm.StateUpdating:
		// Updating is the state of several installer operations: the
		// one that was running resumes (a rotation with its cutoff, a
		// restore with its snapshot and token).
		if op := rec.LastOperation; op != nil && (op.Type == OpRotateCertificates || op.Type == OpRestore || op.Type == OpUpgrade) {
			return rec.Status, op.Type
		}
		return rec.Status, OpUpdate
	case rec.Unavailable || rec.Status == fsm.StateCanceling || rec.Status == fsm.StateUnavailable:
		return fsm.StateUnavailable, ""
	case rec.Kind == KindImported || rec.Status.Ready():
		return fsm.StateConnecting, OpConnect
	default:
		return fsm.StateUnavailable, ""
	}
}

// endInterrupted writes, on e's worker, the end of the operation a crash
// interrupted and nothing resumes (a cancel that was settling): the row
// then says Unavailable with the operation ended, and the operation joins
// the history. Only such rare rows pay for a write at reload.
func (m *Manager) endInterrupted(e *entry, state fsm.State) {
	_, err := m.queue.add(e.name, "end interrupted operation", false, func(context.Context) {
		err := m.repo.edit(e, func(next *record) bool {
			op := next.LastOperation
			if !op.running() {
				return false
			}
			outcome := OpFailed
			if next.Status == fsm.StateCanceling {
				outcome = OpCanceled
			}
			next.Status = state
			if flag, set := state.UnavailableFlag(); set {
				next.Unavailable = flag
			}
			op.finish(m.opts.Clock().UTC(), outcome, &OperationError{Step: op.Step, Message: next.Reason})
			return true
		})
		if err != nil {
			m.log.Warn("reload: the end of an interrupted operation was not saved", "cluster", e.name, "err", err)
		}
	})
	if err != nil {
		m.log.Warn("reload: the end of an interrupted operation was not saved", "cluster", e.name, "err", err)
	}
}
