package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/zdnscloud/singlecloud/storage"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// LockTimeout bounds the wait for a bbolt file's lock: a running
// singlecloud holds it for as long as it runs, so a longer wait would only
// delay the answer that the file is in use.
const LockTimeout = time.Second

// ErrInUse reports a bbolt file held by a running singlecloud.
var ErrInUse = errors.New("database in use")

// OpenBolt opens the existing bbolt database at path (its key file is
// keyFile, "" for <path>.key) to back it up or migrate it, refusing a
// missing file and, with ErrInUse, a file a running singlecloud holds.
func OpenBolt(path, keyFile string) (*storage.Bolt, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("database %s: %w: give the database file (flag --db)", path, err)
	}
	db, err := storage.OpenBolt(path, storage.BoltOptions{Timeout: LockTimeout, KeyFile: keyFile})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("database %s is in use by a running singlecloud (it holds the file's lock): back it up "+
			"online through that server's API (singlecloud backup --context NAME -o FILE, with a context logged in as admin; singlecloud config get-contexts lists them), or stop it first: %w", path, ErrInUse)
	}
	return db, err
}

// BoltTarget restores into the bbolt database file Path.
type BoltTarget struct {
	Path string
	// KeyFile is the key the backup's secrets are sealed with; "" means
	// <Path>.key, where singlecloud looks for it. It must exist.
	KeyFile string
	// Force replaces an existing installation.
	Force bool
}

func (t BoltTarget) keyFile() string {
	if t.KeyFile != "" {
		return t.KeyFile
	}
	return t.Path + ".key"
}

// String names the target.
func (t BoltTarget) String() string { return "bolt database " + t.Path }

// Restore writes a into a new file beside Path and renames it over Path
// once it is complete, fsynced and verified, so Path is either what it was
// or the whole backup. It first checks that the key file opens a's secrets
// (ErrWrongKey) and, if Path exists, that no singlecloud holds it
// (ErrInUse) and that it is empty unless Force (ErrNotEmpty); Path stays
// locked until the rename. ctx cancellation stops it between batches and
// removes the new file.
func (t BoltTarget) Restore(ctx context.Context, a *Archive) (Stats, error) {
	sealer, err := LoadKey(t.keyFile(), &a.Header)
	if err != nil {
		return Stats{}, fmt.Errorf("restore into %s: %w", t, err)
	}
	if err := a.CheckKey(sealer, t.keyFile()); err != nil {
		return Stats{}, fmt.Errorf("restore into %s: %w", t, err)
	}
	old, err := t.lockExisting()
	if err != nil {
		return Stats{}, err
	}
	if old != nil {
		defer old.Close()
	}
	dir := filepath.Dir(t.Path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(t.Path)+".restore-*")
	if err != nil {
		return Stats{}, fmt.Errorf("restore into %s: %w", t, err)
	}
	tmp := f.Name()
	f.Close()
	renamed := false
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
	}()
	db, err := storage.OpenBolt(tmp, storage.BoltOptions{Timeout: LockTimeout, KeyFile: t.keyFile()})
	if err != nil {
		return Stats{}, fmt.Errorf("restore into %s: %w", t, err)
	}
	// bbolt fsyncs every commit: once closed, the new file is durable.
	st, err := restoreInto(ctx, a, db, t.String()+" (new file "+tmp+")", false)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("restore into %s: %w", t, cerr)
	}
	if err != nil {
		return Stats{}, err
	}
	if err := os.Rename(tmp, t.Path); err != nil {
		return Stats{}, fmt.Errorf("restore into %s: put the new file in place: %w", t, err)
	}
	renamed = true
	if err := durable.SyncDir(dir); err != nil {
		return Stats{}, fmt.Errorf("restore into %s: sync directory %s: %w", t, dir, err)
	}
	return st, nil
}

// lockExisting opens Path if it exists, which takes its lock, and checks
// it is empty unless Force. A file that is not a database is refused
// unless Force.
func (t BoltTarget) lockExisting() (*storage.Bolt, error) {
	if _, err := os.Stat(t.Path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	db, err := storage.OpenBolt(t.Path, storage.BoltOptions{Timeout: LockTimeout, KeyFile: t.keyFile()})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("restore into %s: a running singlecloud holds it (the file's lock): stop it first: %w", t, ErrInUse)
	case err != nil && t.Force:
		return nil, nil // replaced whatever it is
	case err != nil:
		return nil, fmt.Errorf("restore into %s: open the existing file: %w (give --force to replace it)", t, err)
	}
	if err := checkEmpty(db, t.String(), t.Force); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
