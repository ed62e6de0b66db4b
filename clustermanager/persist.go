package clustermanager

import (
	"fmt"

	"github.com/zdnscloud/singlecloud/storage"
)

// putRecordLocked stamps next with the time, writes it as e's row — with
// whatever also writes, in the same transaction — and only then makes it
// e's record, so memory never runs ahead of disk. The caller holds
// e.writeMu and built next from e's current record. It is the one place
// that writes a live cluster's row: transitions (the fsm hooks),
// checkpoints and running-step progress all go through it.
func (m *Manager) putRecordLocked(e *entry, next *record, also func(tx storage.Tx) error) error {
	next.UpdatedAt = m.opts.Clock().UTC()
	b, err := encodeRecord(next, m.opts.Sealer)
	if err != nil {
		return err
	}
	err = m.opts.Store.Update(func(tx storage.Tx) error {
		if err := tx.Put(storage.BucketClusters, e.name, b); err != nil {
			return err
		}
		if also != nil {
			return also(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save cluster %s: %w", e.name, err)
	}
	e.setRecord(next)
	return nil
}
