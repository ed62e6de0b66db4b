package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/validation"
)

// config is everything the server is started with. Every flag can also be
// set by a SINGLECLOUD_* environment variable; a flag given on the command
// line wins.
type config struct {
	Listen string
	// Store is the database: storeBolt (the file DB) or storeEtcd.
	Store string
	// DB is the bbolt file; ignored with --store etcd.
	DB string
	// DataDir is the directory of the state's local files when the
	// defaults put them in one (--data-dir, or ./singlecloud-data when
	// neither it nor --db is given): the database, its key and the admin
	// password file, the image and snapshot directories. Absolute; ""
	// when --db (or, with etcd, the key file) places them instead.
	DataDir string
	// LegacyDB is set when the server runs on ./singlecloud.db, the
	// default of earlier releases, found in the current directory.
	LegacyDB bool
	// Etcd is how to reach the etcd of --store etcd.
	Etcd           etcdConfig
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
	// ArtifactDir is the cache of release files zke installs that no
	// image carries (absolute); default <db dir>/artifacts.
	ArtifactDir string
	// ArtifactMirror is where clusters without an artifactMirror fetch
	// release files from; empty: their upstream addresses.
	ArtifactMirror string
	// SnapshotDir is where clusters' etcd snapshots are kept, sealed
	// with the database's key (absolute); default <db dir>/snapshots.
	SnapshotDir string
	// Action is what the command does: serve (the zero value), or print
	// the help or the version and exit 0.
	Action action
	// Usage is the help text, filled for actionHelp.
	Usage string

	// AllowLinkLocalHosts lets hosts and nodes have link-local and cloud
	// metadata addresses (validation.AddressPolicy).
	AllowLinkLocalHosts bool
}

// The values of --store.
const (
	storeBolt = "bolt"
	storeEtcd = "etcd"
)

// defaultEtcdPrefix is --etcd-prefix's default.
const defaultEtcdPrefix = "/singlecloud/"

// etcdConfig is the --etcd-* flags, used with --store etcd.
type etcdConfig struct {
	Endpoints []string
	// CertFile and KeyFile are the client certificate and its key, CAFile
	// the CA of etcd's serving certificate; all optional.
	CertFile string
	KeyFile  string
	CAFile   string
	Prefix   string
	// SealKeyFile is the key that seals secrets, the same file on every
	// replica (the --db's <db>.key of bbolt).
	SealKeyFile string
	// AdvertiseURL is the URL the other replicas forward requests to
	// while this one leads; "" when --listen names no host and none was
	// given (one replica only).
	AdvertiseURL string
	// LeaderTTL is the lease of this replica's session: how long a dead
	// leader leads before another takes over.
	LeaderTTL time.Duration
}

// defaultLeaderTTL is --leader-ttl's default: a killed leader is replaced
// within it (plus an election's round trips), while etcd's keep-alives,
// sent every third of it, survive a pause of a few seconds of a loaded
// machine or a network.
const defaultLeaderTTL = 5 * time.Second

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
REST API (under /apis/zcloud.cn/v1) and keeps its state in one bbolt file
(--store bolt, the default) or in etcd (--store etcd). With no flags it
serves on :8080 with its files in ./singlecloud-data.

With --store etcd, several singlecloud replicas may run on one
--etcd-prefix: they elect one leader, which alone runs the clusters'
operations and writes (fenced: a replica that lost the leadership cannot
write); the others forward the API to its --advertise-url. A leader that
loses the leadership stops its work and exits with status 1: run the
replicas under a supervisor that restarts them (systemd Restart=always).

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
	fs.StringVar(&c.Store, "store", env("STORE", storeBolt), "where the state is kept: bolt (the --db file) or etcd (--etcd-*; several replicas per --etcd-prefix elect a leader) (SINGLECLOUD_STORE)")
	fs.StringVar(&c.DataDir, "data-dir", env("DATA_DIR", ""), "directory of the server's files: the database, its key, the admin password file, images/ and snapshots/ (SINGLECLOUD_DATA_DIR); default: "+defaultDataDir+" (an earlier release's ./singlecloud.db, if there is one, keeps being used)")
	fs.StringVar(&c.DB, "db", env("DB", ""), "bbolt database file; its key is <db>.key (SINGLECLOUD_DB); ignored with --store etcd; default: <data-dir>/singlecloud.db")
	endpoints := env("ETCD_ENDPOINTS", "")
	fs.StringVar(&endpoints, "etcd-endpoints", endpoints, "with --store etcd: etcd's client URLs, comma-separated, e.g. https://10.0.0.1:2379,https://10.0.0.2:2379 (SINGLECLOUD_ETCD_ENDPOINTS); required")
	fs.StringVar(&c.Etcd.CertFile, "etcd-cert", env("ETCD_CERT", ""), "with --store etcd: client certificate (PEM) for etcd, with --etcd-key (SINGLECLOUD_ETCD_CERT)")
	fs.StringVar(&c.Etcd.KeyFile, "etcd-key", env("ETCD_KEY", ""), "with --store etcd: private key of --etcd-cert (SINGLECLOUD_ETCD_KEY)")
	fs.StringVar(&c.Etcd.CAFile, "etcd-ca", env("ETCD_CA", ""), "with --store etcd: CA (PEM) of etcd's serving certificate (SINGLECLOUD_ETCD_CA); default: the system's roots for https endpoints")
	fs.StringVar(&c.Etcd.Prefix, "etcd-prefix", env("ETCD_PREFIX", defaultEtcdPrefix), "with --store etcd: prefix of every key; the replicas of one installation share it (SINGLECLOUD_ETCD_PREFIX)")
	fs.StringVar(&c.Etcd.SealKeyFile, "etcd-key-file", env("ETCD_KEY_FILE", ""), "with --store etcd: the key file that seals secrets, the same file for every singlecloud of the prefix; created only for a new prefix (SINGLECLOUD_ETCD_KEY_FILE); required")
	fs.StringVar(&c.Etcd.AdvertiseURL, "advertise-url", env("ADVERTISE_URL", ""), "with --store etcd: the URL the other replicas forward the API to while this one leads, e.g. https://10.0.0.5:8080 (SINGLECLOUD_ADVERTISE_URL); required with several replicas; default: derived from --listen when it names a host")
	leaderTTL := env("LEADER_TTL", defaultLeaderTTL.String())
	fs.Func("leader-ttl", "with --store etcd: the lease of each replica's leadership, whole seconds of at least 2s: a dead leader is replaced within it and a few seconds (SINGLECLOUD_LEADER_TTL, default 5s)", func(s string) error {
		leaderTTL = s
		return nil
	})
	fs.StringVar(&c.AdminPassword, "admin-password", env("ADMIN_PASSWORD", ""), "set the admin password (SINGLECLOUD_ADMIN_PASSWORD); default: random on first start")
	fs.StringVar(&c.TLSCert, "tls-cert", env("TLS_CERT", ""), "serve HTTPS with this certificate (SINGLECLOUD_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", env("TLS_KEY", ""), "private key of --tls-cert (SINGLECLOUD_TLS_KEY)")
	fs.StringVar(&c.MetricsListen, "metrics-listen", env("METRICS_LISTEN", ""), "serve GET /metrics without a token on this address only, for a scraper on a private network (SINGLECLOUD_METRICS_LISTEN); default: /metrics on --listen, for the admin's token")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (SINGLECLOUD_LOG_LEVEL)")
	fs.StringVar(&c.SnapshotDir, "snapshot-dir", env("SNAPSHOT_DIR", ""), "directory of the clusters' etcd snapshots, encrypted with the database's key (SINGLECLOUD_SNAPSHOT_DIR); default: <db dir>/snapshots")
	fs.StringVar(&c.ArtifactDir, "artifact-dir", env("ARTIFACT_DIR", ""), "cache of the release files zke installs that no image carries, such as the CNI plugins, verified by their published checksums (SINGLECLOUD_ARTIFACT_DIR); default: <db dir>/artifacts")
	fs.StringVar(&c.ArtifactMirror, "artifact-mirror", env("ARTIFACT_MIRROR", ""), "base address of a mirror of those release files, laid out as <mirror>/<host>/<path> of each upstream address, for clusters without an artifactMirror (SINGLECLOUD_ARTIFACT_MIRROR); default: the upstream addresses")
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
	allowLinkLocal := env("ALLOW_LINK_LOCAL_HOSTS", "false")
	fs.BoolFunc("allow-link-local-hosts", "accept hosts and cluster nodes at link-local or cloud metadata addresses (169.254.0.0/16, fe80::/10), refused by default (SINGLECLOUD_ALLOW_LINK_LOCAL_HOSTS)", func(s string) error {
		allowLinkLocal = s
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
	if c.AllowLinkLocalHosts, err = strconv.ParseBool(allowLinkLocal); err != nil {
		return c, fmt.Errorf("allow-link-local-hosts: %q is not true or false", allowLinkLocal)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, errors.New("tls-cert and tls-key must be given together")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, fmt.Errorf("log-level: %q is not one of debug, info, warn, error", c.LogLevel)
	}
	// The directory of the state's files: --data-dir, or the --db's, or
	// the key file's.
	if err := c.resolveDataDir(fileExists); err != nil {
		return c, err
	}
	stateDir := c.DataDir
	switch c.Store {
	case storeBolt:
		if stateDir == "" {
			stateDir = filepath.Dir(c.DB)
		}
		if err := c.Etcd.givenWithBolt(endpoints, leaderTTL); err != nil {
			return c, err
		}
	case storeEtcd:
		if err := c.Etcd.parse(endpoints); err != nil {
			return c, err
		}
		if err := c.Etcd.parseReplica(c.Listen, c.TLSCert != "", leaderTTL); err != nil {
			return c, err
		}
		if stateDir == "" {
			stateDir = filepath.Dir(c.Etcd.SealKeyFile)
		}
		// --db is not opened; it only anchors the files kept "beside
		// the database" (the admin password file), which belong
		// beside the key file here, named after it (seal.key:
		// seal.admin-password).
		c.DB = strings.TrimSuffix(c.Etcd.SealKeyFile, filepath.Ext(c.Etcd.SealKeyFile)) + ".db"
	default:
		return c, fmt.Errorf("store: %q is not bolt or etcd", c.Store)
	}
	if c.ImageDir == "" {
		c.ImageDir = filepath.Join(stateDir, "images")
	}
	if c.ImageDir, err = filepath.Abs(c.ImageDir); err != nil {
		return c, fmt.Errorf("image-dir: %w", err)
	}
	if c.ArtifactDir == "" {
		c.ArtifactDir = filepath.Join(stateDir, "artifacts")
	}
	if c.ArtifactDir, err = filepath.Abs(c.ArtifactDir); err != nil {
		return c, fmt.Errorf("artifact-dir: %w", err)
	}
	if err := validation.ArtifactMirror(c.ArtifactMirror); err != nil {
		return c, fmt.Errorf("artifact-mirror: %w", err)
	}
	if c.SnapshotDir == "" {
		c.SnapshotDir = filepath.Join(stateDir, "snapshots")
	}
	if c.SnapshotDir, err = filepath.Abs(c.SnapshotDir); err != nil {
		return c, fmt.Errorf("snapshot-dir: %w", err)
	}
	return c, nil
}

// parse checks the --etcd-* flags of --store etcd; endpoints is the
// comma-separated list.
func (e *etcdConfig) parse(endpoints string) error {
	e.Endpoints = nil
	for _, ep := range strings.Split(endpoints, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			e.Endpoints = append(e.Endpoints, ep)
		}
	}
	if len(e.Endpoints) == 0 {
		return errors.New("etcd-endpoints: required with --store etcd: etcd's client URLs, comma-separated")
	}
	for _, ep := range e.Endpoints {
		if err := checkEtcdEndpoint(ep); err != nil {
			return err
		}
	}
	if e.SealKeyFile == "" {
		return errors.New("etcd-key-file: required with --store etcd: the key file that seals secrets " +
			"(created for a new --etcd-prefix; copy it to every singlecloud of the prefix)")
	}
	if (e.CertFile == "") != (e.KeyFile == "") {
		return errors.New("etcd-cert and etcd-key must be given together")
	}
	if strings.TrimSpace(e.Prefix) == "" {
		return fmt.Errorf("etcd-prefix: %q: give a prefix of this installation's keys, e.g. %s", e.Prefix, defaultEtcdPrefix)
	}
	if !strings.HasSuffix(e.Prefix, "/") {
		e.Prefix += "/"
	}
	return nil
}

// givenWithBolt refuses --etcd-* flags with --store bolt: they would be
// ignored, and the state kept in a file the operator did not mean.
func (e etcdConfig) givenWithBolt(endpoints, leaderTTL string) error {
	if leaderTTL == defaultLeaderTTL.String() {
		leaderTTL = ""
	}
	for _, f := range []struct{ name, value string }{
		{"etcd-endpoints", endpoints}, {"etcd-key-file", e.SealKeyFile}, {"etcd-cert", e.CertFile},
		{"etcd-key", e.KeyFile}, {"etcd-ca", e.CAFile}, {"advertise-url", e.AdvertiseURL}, {"leader-ttl", leaderTTL},
	} {
		if f.value != "" {
			return fmt.Errorf("%s: given with --store bolt, which does not use it: add --store etcd", f.name)
		}
	}
	if e.Prefix != defaultEtcdPrefix {
		return errors.New("etcd-prefix: given with --store bolt, which does not use it: add --store etcd")
	}
	return nil
}

func usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

// checkEtcdEndpoint refuses what is not one of etcd's client URLs
// (http://host:port, https://host:port, unix://path) or a host:port, at
// once: etcd's client would only fail at its dial timeout.
func checkEtcdEndpoint(ep string) error {
	const want = "give etcd's client URL, e.g. https://10.0.0.1:2379"
	if !strings.Contains(ep, "://") {
		if _, port, err := net.SplitHostPort(ep); err != nil || port == "" {
			return fmt.Errorf("etcd-endpoints: %q is neither a URL nor host:port: %s", ep, want)
		}
		return nil
	}
	u, err := url.Parse(ep)
	switch {
	case err != nil:
		return fmt.Errorf("etcd-endpoints: %q: %v: %s", ep, err, want)
	case u.Scheme == "unix" || u.Scheme == "unixs":
		return nil
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("etcd-endpoints: %q: the scheme must be http or https: %s", ep, want)
	case u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil:
		return fmt.Errorf("etcd-endpoints: %q: only a scheme, a host and a port: %s (the prefix is --etcd-prefix, or ?prefix= in migrate)", ep, want)
	}
	return nil
}
