package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/metrics"
)

// shutdownTimeout bounds how long in-flight requests may finish after
// SIGTERM before their connections are closed.
const shutdownTimeout = 10 * time.Second

// run wires the server from cfg and serves until ctx ends, then stops in
// reverse order: HTTP, the term's workers and bus, the database. With
// --store bolt the process is the one term. With --store etcd it is a
// replica (replicate.go): it serves at once (forwarding to the leader),
// campaigns, and runs a term while it leads; a leadership lost (or a
// session, while following) ends run with an error, so that the process
// exits non-zero and its supervisor starts it again as a follower.
func run(ctx context.Context, cfg config, logOut io.Writer) error {
	log := newLogger(logOut, cfg.LogLevel)
	raiseLimits(log)

	opened, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer opened.close()
	// The cluster manager is created by the term; the clusters are
	// counted only at scrapes, which come after.
	var mgr atomic.Pointer[clustermanager.Manager]
	meters := metrics.New(metrics.Options{ClusterStatuses: func() map[string]int { return clusterStatuses(mgr.Load()) }})
	deps := termDeps{cfg: cfg, log: log, db: opened.db, meters: meters, mgr: &mgr}

	// Listen before loading: Load resumes operations, which must not run
	// when the server then fails to start.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another singlecloud running? choose another --listen)", cfg.Listen, err)
	}
	defer ln.Close()
	var metricsLn net.Listener
	if cfg.MetricsListen != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			return fmt.Errorf("listen on %s: %w (choose another --metrics-listen)", cfg.MetricsListen, err)
		}
		defer metricsLn.Close()
	}
	var (
		t       *leaderTerm
		handler http.Handler
		rs      *replicaSet
	)
	if opened.etcd == nil {
		if t, err = startTerm(ctx, deps); err != nil {
			return err
		}
		handler = t.handler
	} else {
		if rs, err = joinReplicas(ctx, opened.etcd, cfg.Etcd.AdvertiseURL, cfg.Etcd.LeaderTTL, log); err != nil {
			return err
		}
		defer rs.leave()
		switch {
		case cfg.Etcd.AdvertiseURL == "":
			log.Warn("no --advertise-url, and --listen names no host: the other replicas cannot forward to this one " +
				"while it leads; give --advertise-url when running several")
		case isLoopbackURL(cfg.Etcd.AdvertiseURL):
			log.Warn("the advertise URL is a loopback address: only replicas on this machine can forward to this one; "+
				"give --advertise-url with an address the other replicas reach", "advertise", cfg.Etcd.AdvertiseURL)
		}
	}
	var r *replicaRun
	if rs != nil {
		reads, err := startFollowerReads(ctx, opened.etcd, cfg.Etcd.AdvertiseURL, log, meters)
		if err != nil {
			return err
		}
		defer reads.close()
		r = &replicaRun{cfg: cfg, log: log, deps: deps, rs: rs, db: opened.etcd, reads: reads}
		if handler, err = r.frontHandler(); err != nil {
			return err
		}
	}
	httpSrv := newHTTPServer(handler, log, defaultHTTPTimeouts())
	serveErr := make(chan error, 2)
	go func() {
		scheme := "http"
		if cfg.TLSCert != "" {
			scheme = "https"
		}
		log.Info("serving", "address", ln.Addr().String(), "scheme", scheme, "store", opened.desc)
		if cfg.TLSCert != "" {
			serveErr <- httpSrv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
		} else {
			serveErr <- httpSrv.Serve(ln)
		}
	}()
	var metricsSrv *http.Server
	if metricsLn != nil {
		metricsSrv = newHTTPServer(metricsOnly(meters.Handler()), log, defaultHTTPTimeouts())
		go func() {
			log.Info("serving metrics", "address", metricsLn.Addr().String(), "scheme", "http")
			if err := metricsSrv.Serve(metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				serveErr <- fmt.Errorf("serve metrics: %w", err)
			}
		}()
	}

	var result error
	if rs == nil {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
		case err := <-serveErr:
			result = fmt.Errorf("serve: %w", err)
		}
	} else {
		result = r.replicate(ctx, serveErr)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := httpSrv.Shutdown(sctx); err != nil {
		_ = httpSrv.Close()
	}
	if metricsSrv != nil {
		if err := metricsSrv.Shutdown(sctx); err != nil {
			_ = metricsSrv.Close()
		}
	}
	if t != nil {
		t.stop()
	}
	log.Info("stopped")
	return result
}

// metricsOnly serves h at GET /metrics and 404 elsewhere: the handler of
// --metrics-listen, which asks no token.
func metricsOnly(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return mux
}

// clusterStatuses counts mgr's clusters by status, for the
// singlecloud_clusters metric: every status a listed cluster can have, 0
// when no cluster has it, so that a dashboard's series never vanish. Nil
// before the manager exists.
func clusterStatuses(mgr *clustermanager.Manager) map[string]int {
	if mgr == nil {
		return nil
	}
	out := map[string]int{}
	for _, s := range []fsm.State{fsm.StateCreating, fsm.StateConnecting, fsm.StateUpdating, fsm.StateUnavailable,
		fsm.StateCanceling, fsm.StateDeleting, fsm.StateRunning, fsm.StateUnreachable} {
		out[string(s)] = 0
	}
	for _, c := range mgr.List(false) {
		out[string(c.Status)]++
	}
	return out
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
