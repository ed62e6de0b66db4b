package clustermanager

import (
	"context"
	"errors"
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
//
// At the first start with row-bound seals (storage.SettingClusterSecretsBound
// unset), the rows whose secrets an older singlecloud sealed unbound are
// re-sealed bound, and the setting is set, in one transaction that also
// reads the rows for loading, before any operation starts; from then on
// such secrets are refused (decodeRecord).
func (m *Manager) Load(ctx context.Context) (int, error) {
	rows, err := m.readRows()
	if err != nil {
		return 0, fmt.Errorf("load clusters: %w", err)
	}
	for _, row := range rows {
		m.restore(row.rec, row.err)
	}
	return len(rows), nil
}

// storedRow is one decoded row of storage.BucketClusters: its record
// (never nil, named after its key) and why it could not be decoded, if so.
type storedRow struct {
	rec *record
	err error
}

// readRows decodes every cluster row once. Until the seal migration has
// run, it does so inside the migration's write transaction (bindLegacySeals).
func (m *Manager) readRows() ([]storedRow, error) {
	_, err := m.opts.Store.Get(storage.BucketSettings, storage.SettingClusterSecretsBound)
	if errors.Is(err, storage.ErrNotFound) {
		return m.bindLegacySeals()
	}
	if err != nil {
		return nil, fmt.Errorf("read setting %s: %w", storage.SettingClusterSecretsBound, err)
	}
	kvs, err := m.opts.Store.List(storage.BucketClusters)
	if err != nil {
		return nil, err
	}
	rows := make([]storedRow, len(kvs))
	for i, kv := range kvs {
		rec, derr := decodeRecord(kv.Value, m.opts.Sealer)
		rec, derr = rowRecord(kv.Key, rec, derr)
		rows[i] = storedRow{rec: rec, err: derr}
	}
	return rows, nil
}

// bindLegacySeals decodes every cluster row, re-seals bound the secrets of
// those an older singlecloud sealed unbound, and sets
// storage.SettingClusterSecretsBound, all in one transaction: a crash
// leaves either every row as it was and the setting unset, or all done.
// Only those rows are re-encoded; a row that does not decode is left as
// it is (it loads as damaged either way).
func (m *Manager) bindLegacySeals() ([]storedRow, error) {
	var rows []storedRow
	bound := 0
	err := m.opts.Store.Update(func(tx storage.Tx) error {
		kvs, err := tx.List(storage.BucketClusters)
		if err != nil {
			return err
		}
		rows, bound = make([]storedRow, len(kvs)), 0
		for i, kv := range kvs {
			rec, unbound, derr := decodeLegacyRecord(kv.Value, m.opts.Sealer)
			rec, derr = rowRecord(kv.Key, rec, derr)
			rows[i] = storedRow{rec: rec, err: derr}
			if !unbound || derr != nil {
				continue
			}
			b, err := encodeRecord(rec, m.opts.Sealer)
			if err != nil {
				return err
			}
			if err := tx.Put(storage.BucketClusters, kv.Key, b); err != nil {
				return fmt.Errorf("save cluster %s: %w", kv.Key, err)
			}
			bound++
		}
		return tx.Put(storage.BucketSettings, storage.SettingClusterSecretsBound, []byte("1"))
	})
	if err != nil {
		return nil, fmt.Errorf("bind the secrets of older cluster rows to their rows: %w", err)
	}
	if bound > 0 {
		m.log.Info("re-sealed cluster secrets bound to their rows", "clusters", bound)
	}
	return rows, nil
}

// rowRecord gives the row stored under key a record named key, whatever
// decoding it gave, and adds the error of a record naming another cluster.
func rowRecord(key string, rec *record, derr error) (*record, error) {
	if rec == nil || rec.Name == "" {
		rec = &record{Name: key, Kind: KindImported}
	}
	if rec.Name != key && derr == nil {
		derr = fmt.Errorf("record names cluster %q but is stored under %q", rec.Name, key)
	}
	rec.Name = key
	return rec, derr
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
