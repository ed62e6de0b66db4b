package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// defaultDataDir holds the server's files when neither --data-dir nor --db
// is given: one directory of its own, so that a start in any directory (a
// source tree, a home directory) never mixes the server's files with the
// directory's own (the snapshot directory once defaulted to ./snapshots,
// which in this repository is a Go package). .gitignore lists it.
const defaultDataDir = "./singlecloud-data"

// legacyDB is the default --db of earlier releases. A server started where
// one is, and no database is in defaultDataDir yet, keeps using it and
// the files beside it, so that an installation from before keeps working.
const legacyDB = "./singlecloud.db"

// dbFile is the database's name inside the data directory.
const dbFile = "singlecloud.db"

// fileExists reports whether path names an existing file or directory.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// resolveDataDir fills DataDir and DB from --data-dir and --db: a given
// --data-dir holds the database unless --db names another; with neither,
// the database of an earlier release's default is kept if it exists, and
// defaultDataDir is used otherwise. DataDir is made absolute.
func (c *config) resolveDataDir(exists func(string) bool) error {
	switch {
	case c.DataDir != "":
	case c.DB != "" || c.Store == storeEtcd:
		// --db, or the key file, places the state's files.
		return nil
	case exists(legacyDB) && !exists(filepath.Join(defaultDataDir, dbFile)):
		c.DB, c.LegacyDB = legacyDB, true
		return nil
	default:
		c.DataDir = defaultDataDir
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("data-dir: %w", err)
	}
	c.DataDir = abs
	if c.DB == "" {
		c.DB = filepath.Join(c.DataDir, dbFile)
	}
	return nil
}

// makeDataDir creates the data directory (0700) if cfg has one and it is
// missing; an existing directory keeps its mode.
func makeDataDir(cfg config) error {
	if cfg.DataDir == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create the data directory %s: %w (choose another with --data-dir)", cfg.DataDir, err)
	}
	return nil
}

// logStart is the server's first log line: where its files are, so that a
// newcomer finds the admin password file and the database.
func logStart(log *slog.Logger, cfg config) {
	where := cfg.DataDir
	if where == "" {
		where = filepath.Dir(absOr(cfg.DB))
	}
	log.Info("starting: the server's files are in "+where, "dataDir", where, "adminPasswordFile",
		absOr(adminPasswordPath(cfg)), "snapshotDir", cfg.SnapshotDir, "imageDir", cfg.ImageDir, "artifactDir", cfg.ArtifactDir)
	if cfg.LegacyDB {
		log.Warn("using "+absOr(legacyDB)+", the default database of an earlier release, with its files beside it; "+
			"to keep the server's files in a directory of their own, stop the server and move singlecloud.db, "+
			"singlecloud.db.key, singlecloud.admin-password, images/ and snapshots/ into "+absOr(defaultDataDir)+
			" (or pass --data-dir)", "db", absOr(cfg.DB))
	}
}

// absOr is path made absolute, or path as it is if that fails.
func absOr(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
