package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
)

// Start-up order (issue 23). The port is bound first, so that a port in
// use stops the start before Load resumes any operation, and served at
// once by a server.Startup: until start-up has finished (the admin
// password of --admin-password applied, the store opened, the clusters
// loaded; with etcd, the replica joined and its copy of the store loaded)
// every request but /healthz and /readyz gets 503 "starting up: retry in
// a few seconds". Binding only after start-up would also keep the old
// admin password from answering, but would leave a supervisor's probes
// unanswered through a long load (thousands of clusters), so it would
// restart a process that is merely loading; and connections taken by the
// kernel before the server serves would still wait for the end of the
// load instead of hearing to retry.

// runHooks are the points at which a test holds start-up; the zero value
// holds nothing.
type runHooks struct {
	// starting, if set, runs once the port is served, before start-up
	// (the admin password, the load); it returns when start-up may go on,
	// or when ctx ends.
	starting func(ctx context.Context)
}

// startedAPI is what start-up built: the handler to serve, and either the
// term (bbolt) or the replica's run (etcd).
type startedAPI struct {
	handler http.Handler
	term    *leaderTerm
	replica *replicaRun
	// close leaves the replicas and stops the copy of the store (etcd);
	// call it after the HTTP server has shut down.
	close func()
}

// startAPI starts what serves the API on opened: with bbolt the one term
// (admin password, load, workers); with etcd this replica's membership,
// its copy of the store and its front, which forwards to the leader. On
// error whatever started is stopped again.
func startAPI(ctx context.Context, cfg config, log *slog.Logger, deps termDeps, opened openedStore) (startedAPI, error) {
	if opened.etcd == nil {
		t, err := startTerm(ctx, deps)
		if err != nil {
			return startedAPI{}, err
		}
		return startedAPI{handler: t.handler, term: t, close: func() {}}, nil
	}
	rs, err := joinReplicas(ctx, opened.etcd, cfg.Etcd.AdvertiseURL, cfg.Etcd.LeaderTTL, log)
	if err != nil {
		return startedAPI{}, err
	}
	switch {
	case cfg.Etcd.AdvertiseURL == "":
		log.Warn("no --advertise-url, and --listen names no host: the other replicas cannot forward to this one " +
			"while it leads; give --advertise-url when running several")
	case isLoopbackURL(cfg.Etcd.AdvertiseURL):
		log.Warn("the advertise URL is a loopback address: only replicas on this machine can forward to this one; "+
			"give --advertise-url with an address the other replicas reach", "advertise", cfg.Etcd.AdvertiseURL)
	}
	reads, err := startFollowerReads(ctx, opened.etcd, cfg.Etcd.AdvertiseURL, log, deps.meters)
	if err != nil {
		rs.leave()
		return startedAPI{}, err
	}
	closeAll := func() {
		reads.close()
		rs.leave()
	}
	r := &replicaRun{cfg: cfg, log: log, deps: deps, rs: rs, db: opened.etcd, reads: reads}
	h, err := r.frontHandler()
	if err != nil {
		closeAll()
		return startedAPI{}, err
	}
	return startedAPI{handler: h, replica: r, close: closeAll}, nil
}

// loadTLS loads --tls-cert and --tls-key into srv before anything starts:
// a bad pair stops the start-up there, instead of once the state is
// loaded and its operations resumed.
func loadTLS(srv *http.Server, cfg config) error {
	if cfg.TLSCert == "" {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return fmt.Errorf("load --tls-cert %s and --tls-key %s: %w", cfg.TLSCert, cfg.TLSKey, err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	return nil
}
