package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/zdnscloud/singlecloud/backup"
	"github.com/zdnscloud/singlecloud/internal/durable"
	"github.com/zdnscloud/singlecloud/storage"
)

// keyFileReminder ends every backup's report: the key is not in it.
const keyFileReminder = "The backup holds the secrets sealed; the key file that opens them is NOT in it: back up %s " +
	"separately (and keep it as private), or the restored secrets cannot be opened.\n"

// isStoreCommand reports whether args are one of the database's commands
// run here, on the database itself: restore, migrate, and backup unless it
// is given --server or --context (then it is the command line's, through
// the running server's API).
func isStoreCommand(args []string) bool {
	switch args[0] {
	case "restore", "migrate", "artifacts":
		return true
	case "backup":
		for _, a := range args[1:] {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "-") && (name == "server" || name == "context") {
				return false
			}
		}
		return true
	}
	return false
}

// storeCommandMain runs args (backup, restore or migrate) on the process's
// streams and returns the exit code: 0 done, 1 failed, 2 a bad command line.
func storeCommandMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runStoreCommand(ctx, args, cmdStreams{in: os.Stdin, out: os.Stdout, err: os.Stderr, getenv: os.Getenv})
}

// cmdStreams are a command's input, outputs and environment.
type cmdStreams struct {
	in     io.Reader
	out    io.Writer
	err    io.Writer
	getenv func(string) string
}

// usageErr is a command line that cannot be run (exit 2).
type usageErr struct{ error }

func runStoreCommand(ctx context.Context, args []string, s cmdStreams) int {
	var err error
	switch args[0] {
	case "backup":
		err = runBackup(ctx, args[1:], s)
	case "restore":
		err = runRestore(ctx, args[1:], s)
	case "migrate":
		err = runMigrate(ctx, args[1:], s)
	case "artifacts":
		err = runArtifacts(ctx, args[1:], s)
	}
	var ue usageErr
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(s.err, "singlecloud %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(s.err, "singlecloud %s: %v\n", args[0], err)
	return 1
}

// storeFlags are the flags naming one database, as the server's.
type storeFlags struct {
	store     string
	db        string
	endpoints string
	etcd      etcdConfig
}

func (f *storeFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	env := func(name, def string) string {
		if v := getenv("SINGLECLOUD_" + name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&f.store, "store", env("STORE", storeBolt), "bolt (the --db file) or etcd (the --etcd-* flags) (SINGLECLOUD_STORE)")
	fs.StringVar(&f.db, "db", env("DB", "./singlecloud.db"), "bbolt database file; its key file is <db>.key (SINGLECLOUD_DB)")
	fs.StringVar(&f.endpoints, "etcd-endpoints", env("ETCD_ENDPOINTS", ""), "with --store etcd: etcd's client URLs, comma-separated (SINGLECLOUD_ETCD_ENDPOINTS)")
	fs.StringVar(&f.etcd.CertFile, "etcd-cert", env("ETCD_CERT", ""), "with --store etcd: client certificate (PEM) (SINGLECLOUD_ETCD_CERT)")
	fs.StringVar(&f.etcd.KeyFile, "etcd-key", env("ETCD_KEY", ""), "with --store etcd: private key of --etcd-cert (SINGLECLOUD_ETCD_KEY)")
	fs.StringVar(&f.etcd.CAFile, "etcd-ca", env("ETCD_CA", ""), "with --store etcd: CA (PEM) of etcd's serving certificate (SINGLECLOUD_ETCD_CA)")
	fs.StringVar(&f.etcd.Prefix, "etcd-prefix", env("ETCD_PREFIX", defaultEtcdPrefix), "with --store etcd: the installation's prefix (SINGLECLOUD_ETCD_PREFIX)")
	fs.StringVar(&f.etcd.SealKeyFile, "etcd-key-file", env("ETCD_KEY_FILE", ""), "with --store etcd: the key file that seals secrets (SINGLECLOUD_ETCD_KEY_FILE)")
}

// check validates the flags as the server does.
func (f *storeFlags) check() error {
	switch f.store {
	case storeBolt:
		if f.db == "" {
			return usageErr{errors.New("db: must not be empty: give the database file")}
		}
		if err := f.etcd.givenWithBolt(f.endpoints, ""); err != nil {
			return usageErr{err}
		}
	case storeEtcd:
		if err := f.etcd.parse(f.endpoints); err != nil {
			return usageErr{err}
		}
	default:
		return usageErr{fmt.Errorf("store: %q is not bolt or etcd", f.store)}
	}
	return nil
}

// keyFile is the path of the database's key file.
func (f *storeFlags) keyFile() string {
	if f.store == storeEtcd {
		return f.etcd.SealKeyFile
	}
	return f.db + ".key"
}

// etcdOptions are the storage options of the --etcd-* flags.
func (f *storeFlags) etcdOptions() storage.EtcdOptions {
	return etcdOptions(f.etcd)
}

func etcdOptions(e etcdConfig) storage.EtcdOptions {
	return storage.EtcdOptions{
		Endpoints: e.Endpoints,
		Prefix:    e.Prefix,
		TLS:       storage.EtcdTLS{CertFile: e.CertFile, KeyFile: e.KeyFile, CAFile: e.CAFile},
		KeyFile:   e.SealKeyFile,
	}
}

func (f *storeFlags) String() string {
	if f.store == storeEtcd {
		return fmt.Sprintf("etcd %s prefix %s", strings.Join(f.etcd.Endpoints, ","), f.etcd.Prefix)
	}
	return "bolt database " + f.db
}

// parseFlags parses args with fs; help is printed on s.err.
func parseFlags(fs *flag.FlagSet, args []string, s cmdStreams, synopsis string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(s.out, "%s\nFlags:\n%s", synopsis, usage(fs))
			return err
		}
		return usageErr{fmt.Errorf("%w (see --help)", err)}
	}
	if fs.NArg() > 0 {
		return usageErr{fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))}
	}
	return nil
}

const backupSynopsis = `Usage: singlecloud backup [--db FILE | --store etcd --etcd-endpoints URLS --etcd-key-file FILE ...] [-o FILE]
       singlecloud backup --context NAME | --server URL [-o FILE]

Writes a consistent backup of singlecloud's database: with --db, of a bbolt file no
server holds (while a server runs, back it up through it: --context or --server,
as the admin); with --store etcd, of every key of the prefix at one revision (the
server may run). To stdout unless -o; never to a terminal. The backup holds the
secrets sealed: back the key file up separately.
`

func runBackup(ctx context.Context, args []string, s cmdStreams) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	var f storeFlags
	f.register(fs, s.getenv)
	out := fs.String("o", "", "write the backup to this file (mode 0600, written whole or not at all); default: stdout")
	if err := parseFlags(fs, args, s, backupSynopsis); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	if *out == "" && isTerminal(s.out) {
		return usageErr{errors.New("o: stdout is a terminal: give -o FILE or redirect stdout to a file")}
	}
	src, info, closeSrc, err := openSource(ctx, &f)
	if err != nil {
		return err
	}
	defer closeSrc()
	st, err := writeOutput(*out, s.out, func(w io.Writer) (backup.Stats, error) { return backup.Write(w, src, info) })
	if err != nil {
		return err
	}
	where := "stdout"
	if *out != "" {
		where = *out
	}
	fmt.Fprintf(s.err, "backup of %s written to %s: %s, %d bytes.\n", f.String(), where, st, st.Bytes)
	fmt.Fprintf(s.err, keyFileReminder, f.keyFile())
	return nil
}

// openSource opens the database of f to back it up, refusing a missing
// key file (which an open would create).
func openSource(ctx context.Context, f *storeFlags) (backup.Source, backup.Info, func(), error) {
	if f.store == storeBolt {
		db, err := backup.OpenBolt(f.db, "")
		if err != nil {
			return nil, backup.Info{}, nil, err
		}
		abs, _ := filepath.Abs(f.db)
		return db, backup.Info{Kind: backup.KindBolt, Origin: abs, KeyFile: abs + ".key"}, func() { db.Close() }, nil
	}
	if _, err := backup.LoadKey(f.etcd.SealKeyFile, nil); err != nil {
		return nil, backup.Info{}, nil, fmt.Errorf("etcd-key-file: %w", err)
	}
	opts := f.etcdOptions()
	opts.MustExist = true // a backup never creates what it backs up
	db, err := storage.OpenEtcd(ctx, opts)
	if err != nil {
		return nil, backup.Info{}, nil, err
	}
	abs, _ := filepath.Abs(f.etcd.SealKeyFile)
	return db, backup.Info{Kind: backup.KindEtcd, Origin: f.String(), KeyFile: abs}, func() { db.Close() }, nil
}

// writeOutput runs write into path (durable.WriteFile: a temporary file
// beside it, fsynced and renamed into place only if write succeeds, the
// directory fsynced so that a crash cannot lose a backup reported
// written) or, for "", into stdout.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) (backup.Stats, error)) (backup.Stats, error) {
	if path == "" {
		return write(stdout)
	}
	var st backup.Stats
	err := durable.WriteFile(path, 0o600, func(w io.Writer) error {
		var err error
		st, err = write(w)
		return err
	})
	if err != nil {
		return st, fmt.Errorf("write %s: %w", path, err)
	}
	return st, nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// backupInfo names the server's database in the header of the backups
// GET /backup makes.
func backupInfo(cfg config) backup.Info {
	if cfg.Store == storeEtcd {
		abs, _ := filepath.Abs(cfg.Etcd.SealKeyFile)
		return backup.Info{Kind: backup.KindEtcd, Origin: fmt.Sprintf("etcd %s prefix %s", joinEndpoints(cfg.Etcd), cfg.Etcd.Prefix), KeyFile: abs}
	}
	abs, _ := filepath.Abs(cfg.DB)
	return backup.Info{Kind: backup.KindBolt, Origin: abs, KeyFile: abs + ".key"}
}
