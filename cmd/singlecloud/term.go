package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zdnscloud/singlecloud/applications"
	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/console"
	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/metrics"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke"
)

// leaderTerm is one leadership: every component that acts on the state (users,
// tokens, the cluster manager's workers, health sweeps and schedules, host
// probes, the application manager, the API), built on the store it writes
// through, loaded, and running until stop. With bbolt the process's one
// term starts at start-up; with etcd a replica starts one when it is
// elected, on a store fenced by its leadership.
type leaderTerm struct {
	// handler is the API, served once the term has started.
	handler http.Handler
	srv     *server.Server
	bus     *pubsub.Bus
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// termDeps is what a term is built from.
type termDeps struct {
	cfg    config
	log    *slog.Logger
	db     sealedStore
	meters *metrics.Metrics
	// mgr receives the cluster manager, for the metrics' cluster counts.
	mgr *atomic.Pointer[clustermanager.Manager]
	// leader and self, with etcd, say who leads (for /version).
	leader func() string
	self   string
	// replicaSealer, with etcd, opens the client addresses followers
	// seal into forwarded requests.
	replicaSealer server.Sealer
	// onBus, if set, is given the term's bus before anything publishes
	// on it (with etcd: to relay its events to the followers).
	onBus func(*pubsub.Bus)
}

// startTerm builds every component on d.db, loads the stored state
// (resuming every operation from its checkpoint, exactly as at a restart)
// and starts the workers under a context of the term's own. On error
// whatever started is stopped again.
func startTerm(ctx context.Context, d termDeps) (*leaderTerm, error) {
	cfg, log, db := d.cfg, d.log, storage.Instrument(d.db, d.meters.StoreDone)
	users, err := auth.NewUsers(db, auth.UsersOptions{
		OnPasswordReset: func(name string) {
			if name == auth.AdminName {
				forgetAdminPassword(cfg, log)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if n, err := users.SealLegacyStamps(); err != nil {
		return nil, err
	} else if n > 0 {
		log.Info("sealed the token stamps an older singlecloud stored in clear; those users log in again", "users", n)
	}
	if err := ensureAdmin(users, cfg, log); err != nil {
		return nil, err
	}
	tokens, err := auth.NewTokens(db, time.Now)
	if err != nil {
		return nil, fmt.Errorf("load token secret: %w", err)
	}
	t := &leaderTerm{bus: pubsub.New(pubsub.Options{})}
	if d.onBus != nil {
		d.onBus(t.bus)
	}
	ok := false
	defer func() {
		if !ok {
			t.bus.Close()
		}
	}()
	installer, err := zke.New(zke.Options{Logger: log.With("component", "zke"), ImageDir: cfg.ImageDir,
		ArtifactDir: cfg.ArtifactDir, ArtifactMirror: cfg.ArtifactMirror})
	if err != nil {
		return nil, err
	}
	snaps, err := snapshots.Open(cfg.SnapshotDir, db.Sealer(), time.Now)
	if err != nil {
		return nil, fmt.Errorf("snapshot directory: %w", err)
	}
	if kept := snaps.Kept(); len(kept) > 0 {
		log.Warn("the snapshot directory holds files singlecloud did not write; they were left as they are",
			"dir", cfg.SnapshotDir, "files", kept)
	}
	// The host manager asks the cluster manager (mgr, below) which
	// clusters use a host; the cluster manager resolves hosts through the
	// host manager.
	var mgr *clustermanager.Manager
	hostMgr, err := hosts.New(hosts.Options{
		Store:     db,
		Sealer:    db.Sealer(),
		Logger:    log,
		Probe:     hosts.ProbeOptions{Interval: cfg.HostProbeInterval},
		InUse:     func(host string) []string { return mgr.ClustersUsingHost(host) },
		Addresses: validation.AddressPolicy{AllowLinkLocal: cfg.AllowLinkLocalHosts},
	})
	if err != nil {
		return nil, err
	}
	mgr, err = clustermanager.New(clustermanager.Options{
		Hosts:          hostMgr,
		Addresses:      validation.AddressPolicy{AllowLinkLocal: cfg.AllowLinkLocalHosts},
		Store:          db,
		Sealer:         db.Sealer(),
		Bus:            t.bus,
		Installer:      installer,
		Checker:        installer,
		Logger:         log.With("component", "clustermanager"),
		HealthInterval: cfg.HealthInterval,
		OnDelete: func(tx storage.Tx, cluster string) error {
			if err := users.DropClusterGrants(tx, cluster); err != nil {
				return err
			}
			return applications.DropClusterInstances(tx, cluster)
		},
		Snapshots: snaps,
		Observer:  d.meters,
	})
	if err != nil {
		return nil, err
	}
	d.mgr.Store(mgr)
	apps, err := newApplications(db, t.bus, mgr, hostMgr, log)
	if err != nil {
		return nil, err
	}
	// With a listener of its own, /metrics is served there only.
	var metricsHandler http.Handler
	if cfg.MetricsListen == "" {
		metricsHandler = d.meters.Handler()
	}
	ui, err := console.New()
	if err != nil {
		return nil, err
	}
	t.srv, err = server.New(server.Options{
		Users:          users,
		Tokens:         tokens,
		Clusters:       mgr,
		Hosts:          hostMgr,
		Applications:   apps,
		Bus:            t.bus,
		Logger:         log.With("component", "server"),
		Version:        buildVersion(),
		Backup:         &server.Backup{Source: db, Info: backupInfo(cfg)},
		Metrics:        d.meters,
		MetricsHandler: metricsHandler,
		Console:        ui,
		Leader:         d.leader,
		Replica:        d.self,
		ReplicaSealer:  d.replicaSealer,
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
		return nil, err
	}
	t.handler = t.srv.Handler()

	runCtx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	defer func() {
		if !ok {
			t.stop()
		}
	}()
	start := time.Now()
	n, err := mgr.Load(runCtx)
	if err != nil {
		return nil, err
	}
	log.Info("clusters loaded", "count", n, "elapsed", time.Since(start).String())
	if n, err := apps.Load(); err != nil {
		return nil, err
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
		return nil, err
	}
	if pruned > 0 {
		log.Info("dropped project grants to clusters that do not exist", "grants", pruned)
	}
	t.wg.Add(3)
	go func() {
		defer t.wg.Done()
		_ = mgr.Run(runCtx)
	}()
	go func() {
		defer t.wg.Done()
		hostMgr.Run(runCtx)
	}()
	go func() {
		defer t.wg.Done()
		apps.Run(runCtx)
	}()
	ok = true
	return t, nil
}

// stop ends the term's websocket streams, cancels its workers and waits
// for them, then closes its bus. The HTTP server serving its handler is
// shut down (or no longer routes to it) first.
func (t *leaderTerm) stop() {
	if t.srv != nil {
		t.srv.Close()
	}
	t.cancel()
	t.wg.Wait()
	t.bus.Close()
}
