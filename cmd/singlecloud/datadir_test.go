package main

import (
	"path/filepath"
	"testing"
)

// TestDataDirDefaults: where the server's files go for each way of giving
// (or not giving) --data-dir and --db, and an earlier release's
// ./singlecloud.db kept in use.
func TestDataDirDefaults(t *testing.T) {
	noEnv := func(string) string { return "" }
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tests := []struct {
		name     string
		args     []string
		existing []string
		wantData string
		wantDB   string
		wantSnap string
		legacy   bool
	}{
		{"no flags", nil, nil, abs("singlecloud-data"), abs("singlecloud-data/singlecloud.db"), abs("singlecloud-data/snapshots"), false},
		{"an earlier release's database", nil, []string{legacyDB}, "", legacyDB, abs("snapshots"), true},
		{"an earlier release's database and a data directory's", nil,
			[]string{legacyDB, filepath.Join(defaultDataDir, dbFile)}, abs("singlecloud-data"),
			abs("singlecloud-data/singlecloud.db"), abs("singlecloud-data/snapshots"), false},
		{"--data-dir", []string{"--data-dir", "/var/lib/sc"}, []string{legacyDB}, "/var/lib/sc", "/var/lib/sc/singlecloud.db", "/var/lib/sc/snapshots", false},
		{"--data-dir and --db", []string{"--data-dir", "/var/lib/sc", "--db", "/srv/x.db"}, nil, "/var/lib/sc", "/srv/x.db", "/var/lib/sc/snapshots", false},
		{"--db", []string{"--db", "/srv/x.db"}, nil, "", "/srv/x.db", "/srv/snapshots", false},
		{"--snapshot-dir", []string{"--snapshot-dir", "/backups/sc"}, nil, abs("singlecloud-data"), abs("singlecloud-data/singlecloud.db"), "/backups/sc", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			// parseConfig looked at this directory, which has none of
			// the files: resolve again as if it had tt.existing.
			c.DataDir, c.DB, c.LegacyDB = "", "", false
			for i := 0; i+1 < len(tt.args); i += 2 {
				switch tt.args[i] {
				case "--data-dir":
					c.DataDir = tt.args[i+1]
				case "--db":
					c.DB = tt.args[i+1]
				}
			}
			exists := func(p string) bool {
				for _, e := range tt.existing {
					if filepath.Clean(e) == filepath.Clean(p) {
						return true
					}
				}
				return false
			}
			if err := c.resolveDataDir(exists); err != nil {
				t.Fatal(err)
			}
			if c.DataDir != tt.wantData || c.DB != tt.wantDB || c.LegacyDB != tt.legacy {
				t.Errorf("data dir %q, db %q, legacy %v; want %q, %q, %v", c.DataDir, c.DB, c.LegacyDB, tt.wantData, tt.wantDB, tt.legacy)
			}
			if len(tt.existing) == 0 {
				if c2, _ := parseConfig(tt.args, noEnv); c2.SnapshotDir != tt.wantSnap {
					t.Errorf("snapshot dir %q, want %q", c2.SnapshotDir, tt.wantSnap)
				}
			}
		})
	}
}
