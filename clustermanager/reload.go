package clustermanager

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/storage"
)

// Load reads every stored cluster into memory (SPEC §5) and starts the
// work each one needs: a connector for clusters that were usable, the rest
// of an interrupted delete. No row is ever skipped: a row that cannot be
// decoded is still listed, as Unavailable with the reason. Load returns
// once every cluster is listed, before any is reachable; call it once,
// before serving.
func (m *Manager) Load(ctx context.Context) (int, error) {
	rows, err := m.opts.Store.List(storage.BucketClusters)
	if err != nil {
		return 0, fmt.Errorf("load clusters: %w", err)
	}
	for _, kv := range rows {
		rec, derr := decodeRecord(kv.Value, m.opts.Sealer)
		if rec == nil || rec.Name == "" {
			rec = &record{Name: kv.Key, Kind: KindImported}
		}
		if rec.Name != kv.Key {
			derr = fmt.Errorf("record names cluster %q but is stored under %q", rec.Name, kv.Key)
			rec.Name = kv.Key
		}
		m.restore(rec, derr)
	}
	return len(rows), nil
}

// restore puts one stored cluster back in memory in the state its record
// implies, without writing (reload must stay fast for thousands of rows;
// the first real transition writes).
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
	switch resume {
	case fsm.StateConnecting:
		m.startOp(e, OpConnect, func(ctx context.Context) { m.connectLoop(ctx, e) })
	case fsm.StateDeleting:
		m.finishDelete(e, false, false)
	case fsm.StateCreating:
		m.launchInstall(e, m.prepareOp(e, OpCreate), OpCreate, false)
	case fsm.StateUpdating:
		m.launchInstall(e, m.prepareOp(e, OpUpdate), OpUpdate, false)
	}
}

// restoredState maps a stored record to the state it restarts in, and the
// work to resume (the zero State for none). A cancel that a crash
// interrupted ends Unavailable: the worker it waited for is gone.
func restoredState(rec *record, decodeErr error) (state, resume fsm.State) {
	switch {
	case decodeErr != nil:
		return fsm.StateUnavailable, ""
	case rec.Status == fsm.StateDeleting:
		return fsm.StateDeleting, fsm.StateDeleting
	case rec.Kind == KindCreated && (rec.Status == fsm.StateCreating || rec.Status == fsm.StateUpdating):
		// An install that a crash interrupted resumes from its last
		// checkpoint.
		return rec.Status, rec.Status
	case rec.Unavailable || rec.Status == fsm.StateCanceling || rec.Status == fsm.StateUnavailable:
		return fsm.StateUnavailable, ""
	case rec.Kind == KindImported || rec.Status.Ready():
		return fsm.StateConnecting, fsm.StateConnecting
	default:
		return fsm.StateUnavailable, ""
	}
}
