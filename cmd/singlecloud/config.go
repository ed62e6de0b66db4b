package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// config is everything the server is started with. Every flag can also be
// set by a SINGLECLOUD_* environment variable; a flag given on the command
// line wins.
type config struct {
	Listen         string
	DB             string
	AdminPassword  string
	TLSCert        string
	TLSKey         string
	HealthInterval time.Duration
	// HostProbeInterval is how often registered hosts are probed.
	HostProbeInterval time.Duration
	LogLevel          string
	// MetricsListen, if set, is the address of a listener of its own
	// serving GET /metrics without a token (for a scraper on a private
	// network); the API's listener then serves no /metrics. Empty: the
	// API's listener serves /metrics to the admin's token.
	MetricsListen string
	// ImageDir is where clusters' imageArchive files are (absolute);
	// default <db dir>/images.
	ImageDir string
	// SnapshotDir is where clusters' etcd snapshots are kept, sealed
	// with the database's key (absolute); default <db dir>/snapshots.
	SnapshotDir string
	// Action is what the command does: serve (the zero value), or print
	// the help or the version and exit 0.
	Action action
	// Usage is the help text, filled for actionHelp.
	Usage string
}

// action is what a command line asks for.
type action int

const (
	actionServe action = iota
	actionHelp
	actionVersion
)

// usageHeader introduces the flags in --help.
const usageHeader = `Usage: singlecloud [flags]

singlecloud is a single-binary Kubernetes cluster manager: it serves its
REST API (under /apis/zcloud.cn/v1) and keeps its state in one bbolt file.
With no flags it serves on :8080 with ./singlecloud.db.

Every flag can also be set by the environment variable shown in parentheses;
a flag given on the command line wins.

Flags:
`

// parseConfig reads flags from args and defaults from getenv.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	var c config
	fs := flag.NewFlagSet("singlecloud", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	env := func(name, def string) string {
		if v := getenv("SINGLECLOUD_" + name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&c.Listen, "listen", env("LISTEN", ":8080"), "address to serve the API on (SINGLECLOUD_LISTEN)")
	fs.StringVar(&c.DB, "db", env("DB", "./singlecloud.db"), "bbolt database file (SINGLECLOUD_DB)")
	fs.StringVar(&c.AdminPassword, "admin-password", env("ADMIN_PASSWORD", ""), "set the admin password (SINGLECLOUD_ADMIN_PASSWORD); default: random on first start")
	fs.StringVar(&c.TLSCert, "tls-cert", env("TLS_CERT", ""), "serve HTTPS with this certificate (SINGLECLOUD_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", env("TLS_KEY", ""), "private key of --tls-cert (SINGLECLOUD_TLS_KEY)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", env("METRICS_LISTEN", ""), "serve GET /metrics without a token on this address only, for a scraper on a private network (SINGLECLOUD_METRICS_LISTEN); default: /metrics on --listen, for the admin's token")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (SINGLECLOUD_LOG_LEVEL)")
	fs.StringVar(&c.SnapshotDir, "snapshot-dir", env("SNAPSHOT_DIR", ""), "directory of the clusters' etcd snapshots, encrypted with the database's key (SINGLECLOUD_SNAPSHOT_DIR); default: <db dir>/snapshots")
	fs.StringVar(&c.ImageDir, "image-dir", env("IMAGE_DIR", ""), "directory holding the image archives a cluster's imageArchive names, relative to it (SINGLECLOUD_IMAGE_DIR); default: <db dir>/images")
	interval := env("HEALTH_INTERVAL", "10s")
	fs.Func("health-interval", "how often ready clusters are probed (SINGLECLOUD_HEALTH_INTERVAL, default 10s)", func(s string) error {
		interval = s
		return nil
	})
	hostInterval := env("HOST_PROBE_INTERVAL", "30s")
	fs.Func("host-probe-interval", "how often registered hosts' SSH is checked (SINGLECLOUD_HOST_PROBE_INTERVAL, default 30s)", func(s string) error {
		hostInterval = s
		return nil
	})
	showVersion := fs.Bool("version", false, "print the version, commit and build date, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.Action, c.Usage = actionHelp, usageHeader+usage(fs)
			return c, nil
		}
		return c, fmt.Errorf("%w\nusage:\n%s", err, usage(fs))
	}
	if *showVersion {
		c.Action = actionVersion
		return c, nil
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q\nusage:\n%s", fs.Arg(0), usage(fs))
	}
	d, err := time.ParseDuration(interval)
	if err != nil || d < 100*time.Millisecond {
		return c, fmt.Errorf("health-interval: %q is not a duration of at least 100ms (e.g. 10s)", interval)
	}
	c.HealthInterval = d
	if c.HostProbeInterval, err = time.ParseDuration(hostInterval); err != nil || c.HostProbeInterval < time.Second {
		return c, fmt.Errorf("host-probe-interval: %q is not a duration of at least 1s (e.g. 30s)", hostInterval)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, errors.New("tls-cert and tls-key must be given together")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("log-level: %q is not one of debug, info, warn, error", c.LogLevel)
	}
	if c.DB == "" {
		return c, errors.New("db: must not be empty")
	}
	if c.ImageDir == "" {
		c.ImageDir = filepath.Join(filepath.Dir(c.DB), "images")
	}
	if c.ImageDir, err = filepath.Abs(c.ImageDir); err != nil {
		return c, fmt.Errorf("image-dir: %w", err)
	}
	if c.SnapshotDir == "" {
		c.SnapshotDir = filepath.Join(filepath.Dir(c.DB), "snapshots")
	}
	if c.SnapshotDir, err = filepath.Abs(c.SnapshotDir); err != nil {
		return c, fmt.Errorf("snapshot-dir: %w", err)
	}
	return c, nil
}

func usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}
