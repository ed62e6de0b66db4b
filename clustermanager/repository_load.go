package clustermanager

import (
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/storage"
)

// storedRow is one decoded row of storage.BucketClusters: its record
// (never nil, named after its key) and why it could not be decoded, if so.
type storedRow struct {
	rec *record
	err error
}

// loadAll decodes every cluster row once. Until the seal migration has
// run, it does so inside the migration's write transaction
// (bindLegacySeals), and reports how many rows that re-sealed.
func (r *repository) loadAll() (rows []storedRow, resealed int, err error) {
	_, err = r.store.Get(storage.BucketSettings, storage.SettingClusterSecretsBound)
	if errors.Is(err, storage.ErrNotFound) {
		return r.bindLegacySeals()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read setting %s: %w", storage.SettingClusterSecretsBound, err)
	}
	kvs, err := r.store.List(storage.BucketClusters)
	if err != nil {
		return nil, 0, err
	}
	rows = make([]storedRow, len(kvs))
	for i, kv := range kvs {
		rec, derr := decodeRecord(kv.Value, r.sealer)
		rec, derr = rowRecord(kv.Key, rec, derr)
		rows[i] = storedRow{rec: rec, err: derr}
	}
	return rows, 0, nil
}

// bindLegacySeals decodes every cluster row, re-seals bound the secrets of
// those an older singlecloud sealed unbound, and sets
// storage.SettingClusterSecretsBound, all in one transaction: a crash
// leaves either every row as it was and the setting unset, or all done.
// Only those rows are re-encoded; a row that does not decode is left as
// it is (it loads as damaged either way).
func (r *repository) bindLegacySeals() ([]storedRow, int, error) {
	var rows []storedRow
	bound := 0
	err := r.store.Update(func(tx storage.Tx) error {
		kvs, err := tx.List(storage.BucketClusters)
		if err != nil {
			return err
		}
		rows, bound = make([]storedRow, len(kvs)), 0
		for i, kv := range kvs {
			rec, unbound, derr := decodeLegacyRecord(kv.Value, r.sealer)
			rec, derr = rowRecord(kv.Key, rec, derr)
			rows[i] = storedRow{rec: rec, err: derr}
			if !unbound || derr != nil {
				continue
			}
			b, err := encodeRecord(rec, r.sealer)
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
		return nil, 0, fmt.Errorf("bind the secrets of older cluster rows to their rows: %w", err)
	}
	return rows, bound, nil
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
