package validation

import (
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestValidateSnapshots(t *testing.T) {
	tests := []struct {
		name   string
		cfg    *model.SnapshotsConfig
		want   []string
		reason string
	}{
		{"absent ok", nil, nil, ""},
		{"defaults ok", &model.SnapshotsConfig{}, nil, ""},
		{"6h keep 10 ok", &model.SnapshotsConfig{Interval: "6h", Keep: 10}, nil, ""},
		{"off ok", &model.SnapshotsConfig{Interval: "0"}, nil, ""},
		{"off as 0s ok", &model.SnapshotsConfig{Interval: "0s"}, nil, ""},
		{"bounds ok", &model.SnapshotsConfig{Interval: "10m", Keep: 100}, nil, ""},
		{"not a duration", &model.SnapshotsConfig{Interval: "daily"}, []string{"snapshots.interval"}, "not a duration"},
		{"too often", &model.SnapshotsConfig{Interval: "5m"}, []string{"snapshots.interval"}, "between 10m and 720h"},
		{"too rare", &model.SnapshotsConfig{Interval: "721h"}, []string{"snapshots.interval"}, "out of range"},
		{"negative", &model.SnapshotsConfig{Interval: "-1h"}, []string{"snapshots.interval"}, "out of range"},
		{"keep negative", &model.SnapshotsConfig{Keep: -1}, []string{"snapshots.keep"}, "between 1 and 100"},
		{"keep too many", &model.SnapshotsConfig{Keep: 101}, []string{"snapshots.keep"}, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			c.Snapshots = tt.cfg
			checkViolations(t, ValidateCreate(c), tt.want, tt.reason)
			old := validCluster(t)
			newCfg := cloneConfig(old)
			newCfg.Snapshots = tt.cfg
			checkViolations(t, ValidateUpdate(old, newCfg), tt.want, tt.reason)
		})
	}
}

func TestSnapshotSchedule(t *testing.T) {
	tests := []struct {
		cfg      *model.SnapshotsConfig
		interval time.Duration
		keep     int
	}{
		{nil, 12 * time.Hour, 5},
		{&model.SnapshotsConfig{}, 12 * time.Hour, 5},
		{&model.SnapshotsConfig{Interval: "0", Keep: 2}, 0, 2},
		{&model.SnapshotsConfig{Interval: "30m"}, 30 * time.Minute, 5},
		{&model.SnapshotsConfig{Interval: "1m", Keep: 1000}, 12 * time.Hour, 5},
	}
	for _, tt := range tests {
		c := model.ClusterConfig{Snapshots: tt.cfg}
		interval, keep := c.SnapshotSchedule()
		if interval != tt.interval || keep != tt.keep {
			t.Errorf("SnapshotSchedule(%+v) = %s, %d; want %s, %d", tt.cfg, interval, keep, tt.interval, tt.keep)
		}
	}
}
