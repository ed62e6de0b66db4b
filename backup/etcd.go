package backup

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/storage"
)

// EtcdTarget restores into the prefix of an etcd Store. The caller opens
// Store (with EtcdOptions.AllowIncomplete when Force, so that a restore
// interrupted before can be replaced) and holds the prefix's lock for the
// whole restore, so that no singlecloud starts on the prefix meanwhile.
type EtcdTarget struct {
	Store *storage.Etcd
	// Endpoints names etcd in messages.
	Endpoints string
	// KeyFile is the path of Store's key file, for messages.
	KeyFile string
	// Force replaces an existing installation.
	Force bool
}

// String names the target.
func (t EtcdTarget) String() string {
	return fmt.Sprintf("etcd %s prefix %s", t.Endpoints, t.Store.Prefix())
}

// Restore writes a into the prefix in transactions of at most batchOps keys
// and batchBytes bytes. It first checks that Store's key opens a's secrets
// (ErrWrongKey) and that the prefix holds no installation unless Force
// (ErrNotEmpty; with Force everything in it is deleted by the first
// transaction). Until the last transaction the prefix's schema version is
// storage.SchemaVersionIncomplete, which no singlecloud starts on; a
// failed or cancelled restore leaves it so. The result is compared with a
// key by key (ErrMismatch).
func (t EtcdTarget) Restore(ctx context.Context, a *Archive) (Stats, error) {
	if err := a.CheckKey(t.Store.Sealer(), t.KeyFile); err != nil {
		return Stats{}, fmt.Errorf("restore into %s: %w", t, err)
	}
	return restoreInto(ctx, a, t.Store, t.String(), t.Force)
}
