package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/zke"
)

// shutdownTimeout bounds how long in-flight requests may finish after
// SIGTERM before their connections are closed.
const shutdownTimeout = 10 * time.Second

// adminPasswordFile is written beside the database on first start, holding
// the generated admin password.
const adminPasswordFile = "singlecloud.admin-password"

// run wires the server from cfg and serves until ctx ends, then stops in
// reverse order: HTTP, cluster workers, bus, database.
func run(ctx context.Context, cfg config, logOut io.Writer) error {
	log := newLogger(logOut, cfg.LogLevel)

	db, err := storage.OpenBolt(cfg.DB, storage.BoltOptions{})
	if err != nil {
		return fmt.Errorf("open database %s: %w", cfg.DB, err)
	}
	defer db.Close()

	users := auth.NewUsers(db)
	if err := ensureAdmin(users, cfg, log); err != nil {
		return err
	}
	tokens, err := auth.NewTokens(db, time.Now)
	if err != nil {
		return fmt.Errorf("load token secret: %w", err)
	}

	bus := pubsub.New(pubsub.Options{})
	defer bus.Close()

	installer, err := zke.New(zke.Options{Logger: log.With("component", "zke")})
	if err != nil {
		return err
	}
	mgr, err := clustermanager.New(clustermanager.Options{
		Store:          db,
		Sealer:         db.Sealer(),
		Bus:            bus,
		Installer:      installer,
		Logger:         log.With("component", "clustermanager"),
		HealthInterval: cfg.HealthInterval,
	})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Users:    users,
		Tokens:   tokens,
		Clusters: mgr,
		Bus:      bus,
		Logger:   log.With("component", "server"),
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
	start := time.Now()
	n, err := mgr.Load(ctx)
	if err != nil {
		return err
	}
	log.Info("clusters loaded", "count", n, "elapsed", time.Since(start).String())

	httpSrv := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = mgr.Run(runCtx)
	}()

	serveErr := make(chan error, 1)
	go func() {
		scheme := "http"
		if cfg.TLSCert != "" {
			scheme = "https"
		}
		log.Info("serving", "address", ln.Addr().String(), "scheme", scheme, "db", cfg.DB)
		if cfg.TLSCert != "" {
			serveErr <- httpSrv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
		} else {
			serveErr <- httpSrv.Serve(ln)
		}
	}()

	var result error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-serveErr:
		result = fmt.Errorf("serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := httpSrv.Shutdown(sctx); err != nil {
		_ = httpSrv.Close()
	}
	srv.Close()
	cancelRun()
	wg.Wait()
	log.Info("stopped")
	return result
}

// ensureAdmin creates the admin user on first start with a random
// password (written to a 0600 file beside the database and logged once),
// or sets the password given by flag or environment.
func ensureAdmin(users *auth.Users, cfg config, log *slog.Logger) error {
	if cfg.AdminPassword != "" {
		if err := users.SetAdminPassword(cfg.AdminPassword); err != nil {
			return fmt.Errorf("set admin password: %w", err)
		}
		return nil
	}
	pw, err := randomPassword(20)
	if err != nil {
		return err
	}
	created, err := users.EnsureAdmin(pw)
	if err != nil {
		return fmt.Errorf("create admin user: %w", err)
	}
	if !created {
		return nil
	}
	path := filepath.Join(filepath.Dir(cfg.DB), adminPasswordFile)
	if err := os.WriteFile(path, []byte(pw+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// The generated password is shown once, on the console of the admin
	// who started the server, as singlecloud's first-start contract says.
	log.Info("created user admin; its password is in the file and shown here once", "file", path, "password", pw)
	return nil
}

func randomPassword(n int) (string, error) {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", errors.New("generate admin password: no randomness available")
		}
		b[i] = alphabet[k.Int64()]
	}
	return string(b), nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
