package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/zdnscloud/singlecloud/backup"
	"github.com/zdnscloud/singlecloud/storage"
)

const migrateSynopsis = `Usage: singlecloud migrate --from bolt:FILE|etcd:URLS[?prefix=P] --to bolt:FILE|etcd:URLS[?prefix=P]
         [--from-key-file FILE] [--to-key-file FILE] [--etcd-cert FILE --etcd-key FILE] [--etcd-ca FILE] [--force]

Moves an installation from one database to another (bbolt to etcd, or back) with
no singlecloud running on either: it backs the source up, restores the backup into
the empty target as singlecloud restore does, and compares the target with it key
by key. The secrets move sealed: the target uses the source's key file (for a bbolt
target, a copy of it at <file>.key). URLS are etcd's client URLs, comma-separated;
P defaults to /singlecloud/. The --etcd-* TLS flags apply to either side's etcd.
`

// endpoint is one side of a migration: a bbolt file or an etcd prefix.
type endpoint struct {
	kind backup.Kind
	path string     // bolt
	etcd etcdConfig // etcd
}

func (e endpoint) String() string {
	if e.kind == backup.KindEtcd {
		return fmt.Sprintf("etcd %s prefix %s", joinEndpoints(e.etcd), e.etcd.Prefix)
	}
	return "bolt database " + e.path
}

// parseEndpoint reads bolt:FILE or etcd:URL[,URL…][?prefix=P] of flag name.
func parseEndpoint(name, spec string, tls etcdConfig) (endpoint, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	switch backup.Kind(kind) {
	case backup.KindBolt:
		if rest == "" {
			return endpoint{}, fmt.Errorf("%s: %q names no file: write bolt:FILE", name, spec)
		}
		return endpoint{kind: backup.KindBolt, path: rest}, nil
	case backup.KindEtcd:
		urls, query, _ := strings.Cut(rest, "?")
		q, err := url.ParseQuery(query)
		if err != nil {
			return endpoint{}, fmt.Errorf("%s: %q: %w: write etcd:URLS?prefix=P", name, spec, err)
		}
		for k := range q {
			if k != "prefix" {
				return endpoint{}, fmt.Errorf("%s: %q: unknown parameter %q: only prefix is known (TLS: --etcd-cert, --etcd-key, --etcd-ca)", name, spec, k)
			}
		}
		e := tls
		e.Prefix = defaultEtcdPrefix
		if p := q.Get("prefix"); p != "" {
			e.Prefix = p
		}
		e.SealKeyFile = "-" // checked by parse; the key files are the --*-key-file flags
		if err := e.parse(urls); err != nil {
			return endpoint{}, fmt.Errorf("%s: %q: %w", name, spec, err)
		}
		return endpoint{kind: backup.KindEtcd, etcd: e}, nil
	}
	return endpoint{}, fmt.Errorf("%s: %q: write bolt:FILE or etcd:URLS?prefix=P", name, spec)
}

func runMigrate(ctx context.Context, args []string, s cmdStreams) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	from := fs.String("from", "", "the source: bolt:FILE or etcd:URLS?prefix=P (required)")
	to := fs.String("to", "", "the target: bolt:FILE or etcd:URLS?prefix=P (required)")
	fromKey := fs.String("from-key-file", "", "the source's key file; default for bolt: FILE.key; required for etcd")
	toKey := fs.String("to-key-file", "", "an etcd target's key file (a copy of the source's); default: the source's key file")
	var tls etcdConfig
	fs.StringVar(&tls.CertFile, "etcd-cert", "", "client certificate (PEM) for etcd")
	fs.StringVar(&tls.KeyFile, "etcd-key", "", "private key of --etcd-cert")
	fs.StringVar(&tls.CAFile, "etcd-ca", "", "CA (PEM) of etcd's serving certificate")
	force := fs.Bool("force", false, "replace the installation the target holds")
	if err := parseFlags(fs, args, s, migrateSynopsis); err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return usageErr{errors.New("from, to: both are required, e.g. --from bolt:./singlecloud.db --to etcd:https://10.0.0.1:2379?prefix=/singlecloud/")}
	}
	src, err := parseEndpoint("from", *from, tls)
	if err != nil {
		return usageErr{err}
	}
	dst, err := parseEndpoint("to", *to, tls)
	if err != nil {
		return usageErr{err}
	}
	if src.String() == dst.String() {
		return usageErr{errors.New("to: the same database as --from")}
	}
	if err := src.setKeyFile(*fromKey, "from-key-file"); err != nil {
		return err
	}
	if dst.kind == backup.KindBolt && *toKey != "" {
		return usageErr{errors.New("to-key-file: a bbolt target's key file is FILE.key, where singlecloud reads it: copy the key there")}
	}
	if *toKey == "" && dst.kind == backup.KindEtcd {
		*toKey = src.keyFile()
	}
	if err := dst.setKeyFile(*toKey, "to-key-file"); err != nil {
		return err
	}

	source, info, closeSrc, err := openMigrationSource(ctx, src)
	if err != nil {
		return err
	}
	defer closeSrc()
	if dst.kind == backup.KindBolt {
		copied, err := giveKeyFile(src.keyFile(), dst)
		if err != nil {
			return fmt.Errorf("to: %w", err)
		}
		if copied {
			fmt.Fprintf(s.err, "copied the key file %s to %s: the secrets stay sealed with it.\n", src.keyFile(), dst.keyFile())
		}
	}
	target, closeDst, err := openMigrationTarget(ctx, dst, source.Sealer(), *force)
	if err != nil {
		return err
	}
	defer closeDst()
	spoolDir := ""
	if dst.kind == backup.KindBolt {
		spoolDir = filepath.Dir(dst.path)
	}
	st, err := backup.Migrate(ctx, source, info, target, spoolDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.err, "migrated %s from %s to %s; verified: every key equal.\n", st, src, dst)
	fmt.Fprintf(s.err, "The secrets stay sealed with %s: start singlecloud on the target with that key file (%s).\n",
		dst.keyFile(), dst.serveFlags())
	return nil
}

// giveKeyFile copies the source's key file to a new bbolt target's
// FILE.key, as an etcd target is given the source's key file: the records
// move sealed, so the target needs the same key. It does nothing (false)
// when the target or its key file exists already; openMigrationTarget then
// checks that key.
func giveKeyFile(srcKey string, dst endpoint) (bool, error) {
	for _, p := range []string{dst.path, dst.keyFile()} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
	}
	if err := storage.CopyKeyFile(srcKey, dst.keyFile()); err != nil {
		return false, fmt.Errorf("give the target the source's key file: %w", err)
	}
	return true, nil
}

func (e *endpoint) setKeyFile(path, flagName string) error {
	switch {
	case e.kind == backup.KindEtcd && path == "":
		return usageErr{fmt.Errorf("%s: required for an etcd source: the key file its secrets are sealed with", flagName)}
	case e.kind == backup.KindEtcd:
		e.etcd.SealKeyFile = path
	case path != "" && path != e.path+".key":
		return usageErr{fmt.Errorf("%s: a bbolt database's key file is FILE.key (%s.key), where singlecloud reads it", flagName, e.path)}
	}
	return nil
}

func (e endpoint) keyFile() string {
	if e.kind == backup.KindEtcd {
		return e.etcd.SealKeyFile
	}
	return e.path + ".key"
}

// serveFlags are the server's flags for the endpoint (without TLS).
func (e endpoint) serveFlags() string {
	if e.kind == backup.KindEtcd {
		return fmt.Sprintf("--store etcd --etcd-endpoints %s --etcd-prefix %s --etcd-key-file %s", joinEndpoints(e.etcd), e.etcd.Prefix, e.etcd.SealKeyFile)
	}
	return "--db " + e.path
}

// openMigrationSource opens the source so that nothing writes to it while
// it is copied: a bbolt file's lock, an etcd prefix's.
func openMigrationSource(ctx context.Context, e endpoint) (backup.Source, backup.Info, func(), error) {
	if e.kind == backup.KindBolt {
		db, err := backup.OpenBolt(e.path, "")
		if err != nil {
			return nil, backup.Info{}, nil, fmt.Errorf("from: %w", err)
		}
		abs, _ := filepath.Abs(e.path)
		return db, backup.Info{Kind: backup.KindBolt, Origin: abs, KeyFile: abs + ".key"}, func() { db.Close() }, nil
	}
	if _, err := backup.LoadKey(e.etcd.SealKeyFile, nil); err != nil {
		return nil, backup.Info{}, nil, fmt.Errorf("from-key-file: %w", err)
	}
	opts := etcdOptions(e.etcd)
	opts.MustExist = true // a migration's source is never created
	db, err := storage.OpenEtcd(ctx, opts)
	if err != nil {
		return nil, backup.Info{}, nil, fmt.Errorf("from: %w", err)
	}
	unlock, _, err := lockPrefix(ctx, db.Client(), db.Prefix())
	if err != nil {
		db.Close()
		return nil, backup.Info{}, nil, fmt.Errorf("from: %w", err)
	}
	abs, _ := filepath.Abs(e.etcd.SealKeyFile)
	return db, backup.Info{Kind: backup.KindEtcd, Origin: e.String(), KeyFile: abs}, func() { unlock(); db.Close() }, nil
}

// openMigrationTarget checks the target's key file against the source's
// sealer before anything is written, and opens and locks an etcd target.
func openMigrationTarget(ctx context.Context, e endpoint, srcSealer storage.Sealer, force bool) (backup.Target, func(), error) {
	sealer, err := backup.LoadKey(e.keyFile(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("to: %w", err)
	}
	if err := backup.CheckSameKey(srcSealer, sealer, e.keyFile()); err != nil {
		return nil, nil, fmt.Errorf("to: %w", err)
	}
	if e.kind == backup.KindBolt {
		return backup.BoltTarget{Path: e.path, Force: force}, func() {}, nil
	}
	db, unlock, err := openEtcdTarget(ctx, e.etcd, nil, force)
	if err != nil {
		return nil, nil, fmt.Errorf("to: %w", err)
	}
	return backup.EtcdTarget{Store: db, Endpoints: joinEndpoints(e.etcd), KeyFile: e.etcd.SealKeyFile, Force: force}, unlock, nil
}
