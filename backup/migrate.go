package backup

import (
	"context"
	"fmt"
	"os"
)

// Target is where a backup is restored: a BoltTarget or an EtcdTarget.
type Target interface {
	Restore(ctx context.Context, a *Archive) (Stats, error)
	String() string
}

// Migrate copies the installation in src to dst through a backup spooled
// in spoolDir ("" for the system's temporary directory): it writes the
// backup, verifies it, restores it into dst (which must be empty unless the
// target's Force) and compares dst with it key by key. Nothing writes to
// src meanwhile only if the caller made sure (a bbolt file's lock, an etcd
// prefix's lock); then dst ends equal to src. The Stats count what was
// copied.
func Migrate(ctx context.Context, src Source, info Info, dst Target, spoolDir string) (Stats, error) {
	f, err := os.CreateTemp(spoolDir, ".singlecloud-migrate-*")
	if err != nil {
		return Stats{}, fmt.Errorf("migrate: create a spool file: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if _, err := Write(f, src, info); err != nil {
		return Stats{}, fmt.Errorf("migrate %s to %s: %w", info.Origin, dst, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return Stats{}, fmt.Errorf("migrate: read the spool file: %w", err)
	}
	a, err := Open(f, spoolDir)
	if err != nil {
		return Stats{}, fmt.Errorf("migrate %s to %s: %w", info.Origin, dst, err)
	}
	defer a.Close()
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	st, err := dst.Restore(ctx, a)
	if err != nil {
		return Stats{}, fmt.Errorf("migrate %s: %w", info.Origin, err)
	}
	return st, nil
}
