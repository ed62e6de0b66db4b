package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// parseReplica checks --advertise-url and --leader-ttl of --store etcd,
// deriving the URL from --listen when that names a host.
func (e *etcdConfig) parseReplica(listen string, tls bool, leaderTTL string) error {
	d, err := time.ParseDuration(leaderTTL)
	if err != nil || d < 2*time.Second || d%time.Second != 0 {
		return fmt.Errorf("leader-ttl: %q is not a whole number of seconds of at least 2s (e.g. 5s): etcd leases "+
			"count seconds, and a shorter one expires under an ordinary pause", leaderTTL)
	}
	e.LeaderTTL = d
	if e.AdvertiseURL == "" {
		e.AdvertiseURL = advertiseFromListen(listen, tls)
		return nil
	}
	u, err := url.Parse(e.AdvertiseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("advertise-url: %q is not a URL like https://10.0.0.5:8080 (scheme, host and port only): "+
			"give the address the other replicas reach this one's --listen at", e.AdvertiseURL)
	}
	e.AdvertiseURL = u.Scheme + "://" + u.Host
	return nil
}

// advertiseFromListen is the URL of --listen when it names a host (not a
// wildcard address), else "".
func advertiseFromListen(listen string, tls bool) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil || host == "" || port == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return ""
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// forwardTLS is how a follower trusts an https leader: nil (the system's
// roots) without --tls-cert; with it, the system's roots plus this
// replica's own certificate chain, so that replicas sharing one
// self-signed certificate trust each other.
func forwardTLS(cfg config) *tls.Config {
	if cfg.TLSCert == "" {
		return nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if pem, err := os.ReadFile(cfg.TLSCert); err == nil {
		pool.AppendCertsFromPEM(pem)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
}

// isLoopbackURL reports whether u's host is a loopback address or
// localhost.
func isLoopbackURL(u string) bool {
	parsed, err := url.Parse(u)
	if err != nil {
		return false
	}
	host := parsed.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host == "localhost"
}
