package snapshots

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Verification states of a snapshot.
const (
	// Unverified snapshots were never drilled, or their drill was
	// interrupted.
	Unverified = "unverified"
	// Verifying snapshots are being drilled now.
	Verifying = "verifying"
	// Verified snapshots were restored into a working etcd holding what
	// their record says.
	Verified = "verified"
	// Failed snapshots did not restore, or restored into something else
	// than their record says; VerifyError tells why.
	Failed = "failed"
)

// Meta is the record of one stored snapshot, kept beside it as <id>.json.
// It holds no secret: the snapshot's contents stay sealed.
type Meta struct {
	// ID is the snapshot's UTC time and 4 random hex digits, e.g.
	// "20261125-140102-3f9a".
	ID      string `json:"id"`
	Cluster string `json:"cluster"`
	// Name is "<cluster>-<id>", for people and file names.
	Name string `json:"name"`
	// Trigger is why it was taken: "manual", "scheduled", "before update"…
	Trigger string `json:"trigger"`
	// Pinned snapshots (taken before an operation) are never pruned.
	Pinned bool `json:"pinned"`
	// Member is the etcd member (node name) it was taken from.
	Member    string    `json:"member"`
	TakenBy   string    `json:"takenBy,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Size is the plaintext size in bytes.
	Size int64 `json:"size"`
	// SHA256 is the hex sha256 of the plaintext.
	SHA256 string `json:"sha256"`
	// Revision, KeyCount and StorageVersion are what etcd's snapshot
	// status read from the snapshot when it was saved.
	Revision       int64  `json:"revision"`
	KeyCount       int    `json:"keyCount"`
	StorageVersion string `json:"storageVersion,omitempty"`
	// Verification is one of Unverified, Verifying, Verified, Failed.
	Verification string `json:"verification"`
	// VerifiedAt is when the last successful drill finished.
	VerifiedAt *time.Time `json:"verifiedAt,omitempty"`
	// VerifyError is why the last drill failed.
	VerifyError string `json:"verifyError,omitempty"`
	// DrillSeconds is how long the last drill took.
	DrillSeconds float64 `json:"drillSeconds,omitempty"`
}

// File names inside a cluster's directory.
const (
	snapExt = ".snap"
	metaExt = ".json"
	// tempMark is in the name of every file being written; such files are
	// leftovers of a crash when the store is opened.
	tempMark = ".tmp-"
)

// readMetaFile reads the record at path. A missing file is reported with
// an error wrapping ErrNotFound.
func readMetaFile(path string) (Meta, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, fmt.Errorf("snapshot record %s: %w", filepath.Base(path), ErrNotFound)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("read snapshot record: %w", err)
	}
	var m Meta
	if err := json.Unmarshal(data, &m); err != nil {
		return Meta{}, fmt.Errorf("snapshot record %s is not valid JSON (%v): delete it and its .snap file: %w",
			path, err, ErrCorrupt)
	}
	if m.Verification == "" {
		m.Verification = Unverified
	}
	return m, nil
}

// encodeMeta is the file contents of m's record.
func encodeMeta(m Meta) ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode snapshot record %s: %w", m.Name, err)
	}
	return append(data, '\n'), nil
}

// sortNewestFirst orders metas by creation time, newest first, then by id.
func sortNewestFirst(ms []Meta) {
	slices.SortFunc(ms, func(a, b Meta) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}
