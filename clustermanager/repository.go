package clustermanager

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/storage"
)

// historyLimit is how many ended operations a cluster's history keeps;
// older ones are dropped, oldest first.
const historyLimit = 50

// repository is the one owner of the cluster records: the only code that
// writes storage.BucketClusters and storage.BucketOperations. It encodes
// and seals a record, writes it, and only then makes it the entry's
// record, so memory never runs ahead of disk. When a write ends an
// operation, the operation joins the cluster's history in the same
// transaction.
type repository struct {
	store  storage.Store
	sealer storage.Sealer
	clock  func() time.Time
	// onDelete runs in the transaction that removes a cluster
	// (Options.OnDelete).
	onDelete func(tx storage.Tx, cluster string) error
}

// change is the payload of every transition: how it edits the cluster's
// record. The caller says what the transition means for the row; the
// repository writes it before the state moves.
type change func(r *record)

// saveTransition writes e's record as it is after a transition into to,
// with edit applied; a transition into Deleted removes the cluster.
func (r *repository) saveTransition(e *entry, to fsm.State, edit change) error {
	if to == fsm.StateDeleted {
		return r.remove(e.name)
	}
	return r.edit(e, func(next *record) bool {
		next.Status = to
		if flag, set := to.UnavailableFlag(); set {
			next.Unavailable = flag
		}
		if to == fsm.StateRunning {
			next.Reason = ""
		}
		if edit != nil {
			edit(next)
		}
		return true
	})
}

// edit applies fn to a copy of e's record and writes the result, unless
// fn reports no change. It is how a running operation saves its progress
// and an admin edit its change; the state does not move.
func (r *repository) edit(e *entry, fn func(next *record) bool) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	prev := e.record()
	next := prev.clone()
	if !fn(next) {
		return nil
	}
	next.UpdatedAt = r.clock().UTC()
	b, err := encodeRecord(next, r.sealer)
	if err != nil {
		return err
	}
	ended, err := endedOperations(prev.LastOperation, next.LastOperation, r.clock().UTC())
	if err != nil {
		return fmt.Errorf("encode the operation history of cluster %s: %w", e.name, err)
	}
	err = r.store.Update(func(tx storage.Tx) error {
		if err := tx.Put(storage.BucketClusters, e.name, b); err != nil {
			return err
		}
		for _, op := range ended {
			if err := appendHistory(tx, e.name, op.started, op.row); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save cluster %s: %w", e.name, err)
	}
	e.setRecord(next)
	return nil
}

// historyRow is one encoded operation for the history.
type historyRow struct {
	started time.Time
	row     []byte
}

// endedOperations returns the operation a write from prev to next ends:
// the running one that next shows ended, or the running one that an
// interrupting operation (a delete of a busy cluster) replaced, which
// joins the history as canceled.
func endedOperations(prev, next *Operation, now time.Time) ([]historyRow, error) {
	if !prev.running() || next == nil {
		return nil, nil
	}
	op := next
	switch {
	case !next.StartedAt.Equal(prev.StartedAt):
		op = prev.interruptedBy(next.Type, now)
	case next.running():
		return nil, nil
	}
	b, err := json.Marshal(op)
	if err != nil {
		return nil, err
	}
	return []historyRow{{op.StartedAt, b}}, nil
}

// remove deletes every row of a cluster: its record, its history, its
// operation log, and (onDelete) other packages' rows naming it.
func (r *repository) remove(name string) error {
	err := r.store.Update(func(tx storage.Tx) error {
		if err := tx.Delete(storage.BucketClusters, name); err != nil {
			return err
		}
		if err := tx.DeletePrefix(storage.BucketOperations, name+"/"); err != nil {
			return err
		}
		if r.onDelete != nil {
			if err := r.onDelete(tx, name); err != nil {
				return err
			}
		}
		return tx.DeletePrefix(storage.BucketOperationLogs, name+"/")
	})
	if err != nil {
		return fmt.Errorf("delete cluster %s from the store: %w", name, err)
	}
	return nil
}

// historyKey orders a cluster's history by start time.
func historyKey(cluster string, started time.Time) string {
	return fmt.Sprintf("%s/%016x", cluster, uint64(started.UnixNano()))
}

// appendHistory adds an ended operation to a cluster's history and drops
// the oldest beyond historyLimit.
func appendHistory(tx storage.Tx, cluster string, started time.Time, op []byte) error {
	if err := tx.Put(storage.BucketOperations, historyKey(cluster, started), op); err != nil {
		return err
	}
	kvs, err := tx.ListPrefix(storage.BucketOperations, cluster+"/")
	if err != nil {
		return err
	}
	for i := 0; i < len(kvs)-historyLimit; i++ {
		if err := tx.Delete(storage.BucketOperations, kvs[i].Key); err != nil {
			return err
		}
	}
	return nil
}

// appendOperation adds an operation that ran beside the cluster's state
// machine (a snapshot) to its history.
func (r *repository) appendOperation(cluster string, op *Operation) error {
	b, err := json.Marshal(op)
	if err != nil {
		return fmt.Errorf("encode an operation of cluster %s: %w", cluster, err)
	}
	err = r.store.Update(func(tx storage.Tx) error {
		if _, err := tx.Get(storage.BucketClusters, cluster); err != nil {
			// Deleted meanwhile: its history went with it.
			return err
		}
		return appendHistory(tx, cluster, op.StartedAt, b)
	})
	if err != nil {
		return fmt.Errorf("save the operation history of %s: %w", cluster, err)
	}
	return nil
}

// history returns a cluster's ended operations, newest first.
func (r *repository) history(cluster string) ([]Operation, error) {
	return readHistory(r.store, cluster)
}

// readHistory reads a cluster's ended operations from s, newest first.
func readHistory(s storage.Reader, cluster string) ([]Operation, error) {
	kvs, err := s.ListPrefix(storage.BucketOperations, cluster+"/")
	if err != nil {
		return nil, fmt.Errorf("read the operation history of %s: %w", cluster, err)
	}
	out := make([]Operation, 0, len(kvs))
	for i := len(kvs) - 1; i >= 0; i-- {
		var op Operation
		if err := json.Unmarshal(kvs[i].Value, &op); err != nil {
			return nil, fmt.Errorf("decode the operation history of %s: %w", cluster, err)
		}
		out = append(out, op)
	}
	return out, nil
}
