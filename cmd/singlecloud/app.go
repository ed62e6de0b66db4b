package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/metrics"
	"github.com/zdnscloud/singlecloud/server"
)

// shutdownTimeout bounds how long in-flight requests may finish after
// SIGTERM before their connections are closed.
const shutdownTimeout = 10 * time.Second

// run wires the server from cfg and serves until ctx ends, then stops in
// reverse order: HTTP, the term's workers and bus, the database. With
// --store bolt the process is the one term. With --store etcd it is a
// replica (replicate.go): it serves once joined (forwarding to the
// leader), campaigns, and runs a term while it leads; a leadership lost
// (or a session, while following) ends run with an error, so that the
// process exits non-zero and its supervisor starts it again as a follower.
// Until start-up has finished only /healthz and /readyz answer
// (startup.go).
func run(ctx context.Context, cfg config, logOut io.Writer) error {
	return runWith(ctx, cfg, logOut, runHooks{})
}

// runWith is run with the hooks a test holds start-up at.
func runWith(ctx context.Context, cfg config, logOut io.Writer, hooks runHooks) error {
	log := newLogger(logOut, cfg.LogLevel)
	logStart(log, cfg)
	raiseLimits(log)
	if err := makeDataDir(cfg); err != nil {
		return err
	}

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
	// Served at once, 503 but for the probes until start-up has finished.
	starting := server.NewStartup(server.StartupOptions{Logger: log.With("component", "server")})
	httpSrv := newHTTPServer(starting, log, defaultHTTPTimeouts())
	if err := loadTLS(httpSrv, cfg); err != nil {
		return err
	}
	serveErr := make(chan error, 2)
	go func() {
		scheme := "http"
		if cfg.TLSCert != "" {
			scheme = "https"
		}
		log.Info("serving", "address", ln.Addr().String(), "scheme", scheme, "store", opened.desc)
		if cfg.TLSCert != "" {
			serveErr <- httpSrv.ServeTLS(ln, "", "") // loadTLS loaded the certificate
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

	// Shut down before the term stops, and, should start-up fail, before
	// the store closes.
	stopHTTP := sync.OnceFunc(func() {
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
	})
	defer stopHTTP()

	if hooks.starting != nil {
		hooks.starting(ctx)
	}
	api, err := startAPI(ctx, cfg, log, deps, opened)
	if err != nil {
		return err
	}
	defer api.close()
	starting.Ready(api.handler)

	var result error
	if api.replica == nil {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
		case err := <-serveErr:
			result = fmt.Errorf("serve: %w", err)
		}
	} else {
		result = api.replica.replicate(ctx, serveErr)
	}
	stopHTTP()
	if api.term != nil {
		api.term.stop()
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
