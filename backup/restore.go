package backup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zdnscloud/singlecloud/storage"
)

// Batch bounds of a restore: each batch is one Update, so one etcd
// transaction. Both stay below etcd's defaults (--max-txn-ops 128,
// --max-request-bytes 1.5 MiB) with room for the transaction's overhead.
const (
	batchOps   = 100
	batchBytes = 1 << 20
)

// restoreInto writes every record of a into dst, which must hold no
// installation unless force (then everything in it is replaced). desc names
// dst in errors. Writes go in batches (batchOps, batchBytes); the first one
// marks dst incomplete (storage.SchemaVersionIncomplete), the last one marks it
// complete. ctx is checked between batches; a cancelled or failed restore
// leaves dst marked incomplete. Afterwards dst is compared with a.
func restoreInto(ctx context.Context, a *Archive, dst storage.Store, desc string, force bool) (Stats, error) {
	if err := checkEmpty(dst, desc, force); err != nil {
		return Stats{}, err
	}
	err := dst.Update(func(tx storage.Tx) error {
		if force {
			for _, b := range storage.Buckets() {
				if err := tx.DeletePrefix(b, ""); err != nil {
					return err
				}
			}
		}
		return tx.Put(storage.BucketSettings, storage.SettingSchemaVersion, []byte(storage.SchemaVersionIncomplete))
	})
	if err != nil {
		return Stats{}, fmt.Errorf("restore into %s: mark it incomplete: %w", desc, err)
	}
	var (
		batch []Record
		size  int
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := dst.Update(func(tx storage.Tx) error {
			for _, r := range batch {
				if err := tx.Put(r.Bucket, r.Key, r.Value); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("write %d keys from %s/%s: %w", len(batch), batch[0].Bucket, batch[0].Key, err)
		}
		batch, size = batch[:0], 0
		return nil
	}
	err = a.Each(func(r Record) error {
		if r.Bucket == storage.BucketSettings && r.Key == storage.SettingSchemaVersion {
			return nil // written last
		}
		if len(batch) > 0 && (len(batch) >= batchOps || size+len(r.Key)+len(r.Value) > batchBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, r)
		size += len(r.Key) + len(r.Value)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = dst.Put(storage.BucketSettings, storage.SettingSchemaVersion, []byte(storage.SchemaVersion))
	}
	if err != nil {
		return Stats{}, fmt.Errorf("restore into %s: %w (the target is left marked incomplete: no singlecloud will "+
			"start on it; run the restore again with --force)", desc, err)
	}
	if err := Verify(a, dst, desc); err != nil {
		return a.Stats, err
	}
	return a.Stats, nil
}

// checkEmpty refuses a dst that holds an installation (any key besides
// the schema version) unless force.
func checkEmpty(dst storage.Store, desc string, force bool) error {
	if force {
		return nil
	}
	var held []string
	err := dst.View(func(r storage.Reader) error {
		for _, b := range storage.Buckets() {
			kvs, err := r.List(b)
			if err != nil {
				return err
			}
			n := len(kvs)
			if b == storage.BucketSettings {
				n = 0
				for _, kv := range kvs {
					if kv.Key != storage.SettingSchemaVersion {
						n++
					}
				}
			}
			if n > 0 {
				held = append(held, fmt.Sprintf("%d %s", n, b))
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore into %s: check that it is empty: %w", desc, err)
	}
	if len(held) > 0 {
		return fmt.Errorf("%s already holds an installation (%s): restore into an empty target, or give --force to "+
			"replace everything in it: %w", desc, strings.Join(held, ", "), ErrNotEmpty)
	}
	return nil
}

// Verify compares dst with a: every key of every bucket equal, none
// missing, none more. It returns an error wrapping ErrMismatch naming the
// first differences.
func Verify(a *Archive, dst storage.Store, desc string) error {
	var diffs []error
	note := func(format string, args ...any) {
		if len(diffs) < 10 {
			diffs = append(diffs, fmt.Errorf(format, args...))
		}
	}
	err := dst.View(func(r storage.Reader) error {
		diffs = diffs[:0] // etcd may run this again on a newer revision
		buckets := storage.Buckets()
		bi, i := -1, 0
		var kvs []storage.KV
		finish := func() {
			for ; i < len(kvs); i++ {
				note("%s/%s is in %s but not in the backup", buckets[bi], kvs[i].Key, desc)
			}
		}
		advance := func(to int) error {
			for bi < to {
				finish()
				bi++
				var err error
				if kvs, err = r.List(buckets[bi]); err != nil {
					return err
				}
				i = 0
			}
			return nil
		}
		err := a.Each(func(rec Record) error {
			if err := advance(bucketIndex(rec.Bucket)); err != nil {
				return err
			}
			for i < len(kvs) && kvs[i].Key < rec.Key {
				note("%s/%s is in %s but not in the backup", rec.Bucket, kvs[i].Key, desc)
				i++
			}
			switch {
			case i == len(kvs) || kvs[i].Key != rec.Key:
				note("%s/%s is missing from %s", rec.Bucket, rec.Key, desc)
			case string(kvs[i].Value) != string(rec.Value):
				note("%s/%s differs in %s", rec.Bucket, rec.Key, desc)
				i++
			default:
				i++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := advance(len(buckets) - 1); err != nil {
			return err
		}
		finish()
		return nil
	})
	if err != nil {
		return fmt.Errorf("verify %s against the backup: %w", desc, err)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("verify %s against the backup: %w: %w", desc, errors.Join(diffs...), ErrMismatch)
	}
	return nil
}
