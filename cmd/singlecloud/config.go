package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
	LogLevel       string
}

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
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (SINGLECLOUD_LOG_LEVEL)")
	interval := env("HEALTH_INTERVAL", "10s")
	fs.Func("health-interval", "how often ready clusters are probed (SINGLECLOUD_HEALTH_INTERVAL, default 10s)", func(s string) error {
		interval = s
		return nil
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, fmt.Errorf("usage:\n%s", usage(fs))
		}
		return c, fmt.Errorf("%w\nusage:\n%s", err, usage(fs))
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q\nusage:\n%s", fs.Arg(0), usage(fs))
	}
	d, err := time.ParseDuration(interval)
	if err != nil || d < 100*time.Millisecond {
		return c, fmt.Errorf("health-interval: %q is not a duration of at least 100ms (e.g. 10s)", interval)
	}
	c.HealthInterval = d
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
	return c, nil
}

func usage(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}
