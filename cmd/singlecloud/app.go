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
	"time"

	"github.com/zdnscloud/singlecloud/applications"
	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/console"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/metrics"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/zke"
)

// shutdownTimeout bounds how long in-flight requests may finish after
// SIGTERM before their connections are closed.
const shutdownTimeout = 10 * time.Second

// run wires the server from cfg and serves until ctx ends, then stops in
// reverse order: HTTP, cluster workers, bus, database. With --store etcd it
// also stops, with an error, when it loses the lock that keeps it the only
// singlecloud on its prefix.
func run(ctx context.Context, cfg config, logOut io.Writer) error {
	log := newLogger(logOut, cfg.LogLevel)

	opened, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer opened.close()
	// The cluster manager is created below; the clusters are counted
	// only at scrapes, which come after.
	var mgr *clustermanager.Manager
	meters := metrics.New(metrics.Options{ClusterStatuses: func() map[string]int { return clusterStatuses(mgr) }})
	// Every package reads and writes through the instrumented store.
	db := storage.Instrument(opened.db, meters.StoreDone)

	users, err := auth.NewUsers(db, auth.UsersOptions{
		OnPasswordReset: func(name string) {
			if name == auth.AdminName {
				forgetAdminPassword(cfg, log)
			}
		},
	})
	if err != nil {
		return err
	}
	if n, err := users.SealLegacyStamps(); err != nil {
		return err
	} else if n > 0 {
		log.Info("sealed the token stamps an older singlecloud stored in clear; those users log in again", "users", n)
	}
	if err := ensureAdmin(users, cfg, log); err != nil {
		return err
	}
	tokens, err := auth.NewTokens(db, time.Now)
	if err != nil {
		return fmt.Errorf("load token secret: %w", err)
	}

	bus := pubsub.New(pubsub.Options{})
	defer bus.Close()

	installer, err := zke.New(zke.Options{Logger: log.With("component", "zke"), ImageDir: cfg.ImageDir})
	if err != nil {
		return err
	}
	snaps, err := snapshots.Open(cfg.SnapshotDir, db.Sealer(), time.Now)
	if err != nil {
		return fmt.Errorf("snapshot directory: %w", err)
	}
	// The host manager asks the cluster manager (mgr, above) which
	// clusters use a host; the cluster manager resolves hosts through the
	// host manager.
	hostMgr, err := hosts.New(hosts.Options{
		Store:  db,
		Sealer: db.Sealer(),
		Logger: log,
		Probe:  hosts.ProbeOptions{Interval: cfg.HostProbeInterval},
		InUse:  func(host string) []string { return mgr.ClustersUsingHost(host) },
	})
	if err != nil {
		return err
	}
	mgr, err = clustermanager.New(clustermanager.Options{
		Hosts:          hostMgr,
		Store:          db,
		Sealer:         db.Sealer(),
		Bus:            bus,
		Installer:      installer,
		Logger:         log.With("component", "clustermanager"),
		HealthInterval: cfg.HealthInterval,
		OnDelete: func(tx storage.Tx, cluster string) error {
			if err := users.DropClusterGrants(tx, cluster); err != nil {
				return err
			}
			return applications.DropClusterInstances(tx, cluster)
		},
		Snapshots: snaps,
		Observer:  meters,
	})
	if err != nil {
		return err
	}
	apps, err := newApplications(db, bus, mgr, hostMgr, log)
	if err != nil {
		return err
	}
	// With a listener of its own, /metrics is served there only.
	var metricsHandler http.Handler
	if cfg.MetricsListen == "" {
		metricsHandler = meters.Handler()
	}
	ui, err := console.New()
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Users:          users,
		Tokens:         tokens,
		Clusters:       mgr,
		Hosts:          hostMgr,
		Applications:   apps,
		Bus:            bus,
		Logger:         log.With("component", "server"),
		Version:        buildVersion(),
		Backup:         &server.Backup{Source: db, Info: backupInfo(cfg)},
		Metrics:        meters,
		MetricsHandler: metricsHandler,
		Console:        ui,
		Ready: []server.ReadinessCheck{
			{Name: "store", Check: func(context.Context) error {
				return db.View(func(storage.Reader) error { return nil })
			}},
			{Name: "workers", Check: func(context.Context) error {
				if !mgr.Running() {
					return errors.New("cluster workers are not running")
				}
				return nil
			}},
		},
	})
	if err != nil {
		return err
	}

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
	start := time.Now()
	n, err := mgr.Load(ctx)
	if err != nil {
		return err
	}
	log.Info("clusters loaded", "count", n, "elapsed", time.Since(start).String())
	if n, err := apps.Load(); err != nil {
		return err
	} else if n > 0 {
		log.Info("application instances loaded", "count", n)
	}
	// Grants to clusters that do not exist are left by releases that
	// kept them after a delete; they would apply to the next cluster of
	// that name.
	pruned, err := users.PruneGrants(func(cluster string) bool {
		_, err := mgr.Get(cluster)
		return err == nil
	})
	if err != nil {
		return err
	}
	if pruned > 0 {
		log.Info("dropped project grants to clusters that do not exist", "grants", pruned)
	}

	httpSrv := newHTTPServer(srv.Handler(), log, defaultHTTPTimeouts())

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = mgr.Run(runCtx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		hostMgr.Run(runCtx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		apps.Run(runCtx)
	}()

	serveErr := make(chan error, 1)
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
				select {
				case serveErr <- fmt.Errorf("serve metrics: %w", err):
				default: // the API's server failed first
				}
			}
		}()
	}

	var result error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-serveErr:
		result = fmt.Errorf("serve: %w", err)
	case <-opened.lost:
		// Running on could make two singlecloud run the same
		// operations: the lock may be another's by now.
		result = fmt.Errorf("lost the etcd lock %s.lock (etcd unreachable for %ds, or the lease revoked): stopping, "+
			"since another singlecloud may now run on the prefix; start again once etcd is reachable", cfg.Etcd.Prefix, lockTTL)
		log.Error("stopping", "error", result)
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
	srv.Close()
	cancelRun()
	wg.Wait()
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
