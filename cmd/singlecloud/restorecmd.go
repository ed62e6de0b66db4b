package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zdnscloud/singlecloud/backup"
	"github.com/zdnscloud/singlecloud/storage"
)

const restoreSynopsis = `Usage: singlecloud restore [--db FILE | --store etcd --etcd-endpoints URLS --etcd-key-file FILE ...] [-i FILE] [--force]

Restores a backup made by singlecloud backup (from stdin unless -i) into an empty
database: a new bbolt file (written beside --db, fsynced, renamed into place) or an
empty etcd prefix (transactions under the prefix's lock). Nothing is written before
the backup's checksum and the key file are verified: the key file (<db>.key, or
--etcd-key-file) must be a copy of the key the backup's secrets were sealed with.
A database that holds an installation is refused unless --force (then replaced);
one a running singlecloud holds is always refused.
`

func runRestore(ctx context.Context, args []string, s cmdStreams) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	var f storeFlags
	f.register(fs, s.getenv)
	in := fs.String("i", "", "read the backup from this file; default: stdin")
	force := fs.Bool("force", false, "replace the installation the target holds")
	if err := parseFlags(fs, args, s, restoreSynopsis); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	r := s.in
	if *in != "" {
		file, err := os.Open(*in)
		if err != nil {
			return fmt.Errorf("i: %w", err)
		}
		defer file.Close()
		r = file
	} else if file, ok := r.(*os.File); ok && isTerminal(file) {
		return usageErr{errors.New("i: stdin is a terminal: give -i FILE or redirect a backup to stdin")}
	}
	spoolDir := ""
	if f.store == storeBolt {
		spoolDir = filepath.Dir(f.db)
	}
	a, err := backup.Open(r, spoolDir)
	if err != nil {
		return fmt.Errorf("%w: nothing was written", err)
	}
	defer a.Close()
	var st backup.Stats
	if f.store == storeBolt {
		st, err = backup.BoltTarget{Path: f.db, Force: *force}.Restore(ctx, a)
	} else {
		st, err = restoreEtcd(ctx, a, f.etcd, *force)
	}
	if err != nil {
		return err
	}
	h := a.Header
	fmt.Fprintf(s.err, "restored %s into %s from the backup of %s %s taken on %s at %s; verified: every key equal.\n",
		st, f.String(), h.Source, h.Origin, h.Host, h.Created.Format("2006-01-02 15:04:05 MST"))
	fmt.Fprintf(s.err, "Its secrets open with %s: keep that key file with the database.\n", f.keyFile())
	return nil
}

// restoreEtcd restores a into the prefix of e, holding the prefix's lock:
// it refuses while a singlecloud runs on the prefix.
func restoreEtcd(ctx context.Context, a *backup.Archive, e etcdConfig, force bool) (backup.Stats, error) {
	db, unlock, err := openEtcdTarget(ctx, e, &a.Header, force)
	if err != nil {
		return backup.Stats{}, err
	}
	defer unlock()
	return backup.EtcdTarget{Store: db, Endpoints: joinEndpoints(e), KeyFile: e.SealKeyFile, Force: force}.Restore(ctx, a)
}

// openEtcdTarget opens the etcd prefix of e to write an installation into
// it and takes its lock. The key file must exist (an open would create
// one); hdr, if known, says where to copy it from. unlock releases the
// lock and closes the store.
func openEtcdTarget(ctx context.Context, e etcdConfig, hdr *backup.Header, force bool) (*storage.Etcd, func(), error) {
	sealer, err := backup.LoadKey(e.SealKeyFile, hdr)
	if err != nil {
		return nil, nil, fmt.Errorf("etcd-key-file: %w", err)
	}
	if hdr != nil {
		// Checked before the open, which writes a new prefix's key check.
		if err := hdr.CheckKey(sealer, e.SealKeyFile); err != nil {
			return nil, nil, err
		}
	}
	opts := etcdOptions(e)
	opts.AllowIncomplete = force
	db, err := storage.OpenEtcd(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	unlock, _, err := lockPrefix(ctx, db.Client(), db.Prefix())
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, func() { unlock(); db.Close() }, nil
}

func joinEndpoints(e etcdConfig) string { return strings.Join(e.Endpoints, ",") }
