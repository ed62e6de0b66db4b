package model

import "time"

// The default snapshot schedule: two a day, the last five kept.
const (
	DefaultSnapshotInterval = 12 * time.Hour
	DefaultSnapshotKeep     = 5
)

// Bounds of a snapshot schedule: more often than MinSnapshotInterval
// loads etcd for little gain; MaxSnapshotKeep bounds the disk a cluster
// may take on the singlecloud server.
const (
	MinSnapshotInterval = 10 * time.Minute
	MaxSnapshotInterval = 30 * 24 * time.Hour
	MaxSnapshotKeep     = 100
)

// SnapshotsConfig is a cluster's etcd snapshot schedule. Snapshots taken
// automatically before an operation (update, certificate rotation,
// restore) are kept apart from it: Keep never removes them.
type SnapshotsConfig struct {
	// Interval is the time between two scheduled snapshots, a Go
	// duration ("12h"); "0" turns the schedule off. Empty: 12h.
	Interval string `json:"interval,omitempty"`
	// Keep is how many scheduled and manual snapshots are kept, the
	// newest; 0: 5.
	Keep int `json:"keep,omitempty"`
}

// SnapshotSchedule returns the cluster's snapshot interval (0: no
// schedule) and how many snapshots it keeps, with the defaults filled in.
// Validation has checked the values; one it would refuse reads as the
// default.
func (c *ClusterConfig) SnapshotSchedule() (time.Duration, int) {
	interval, keep := DefaultSnapshotInterval, DefaultSnapshotKeep
	if c == nil || c.Snapshots == nil {
		return interval, keep
	}
	if v := c.Snapshots.Interval; v == "0" {
		interval = 0
	} else if d, err := time.ParseDuration(v); err == nil && (d == 0 || d >= MinSnapshotInterval && d <= MaxSnapshotInterval) {
		interval = d
	}
	if k := c.Snapshots.Keep; k > 0 && k <= MaxSnapshotKeep {
		keep = k
	}
	return interval, keep
}
