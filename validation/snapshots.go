package validation

import (
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// validateSnapshots checks a cluster's snapshot schedule: an interval that
// is "0" (no schedule) or a Go duration within the model's bounds, and a
// keep count between 1 and model.MaxSnapshotKeep (0 is the default).
func validateSnapshots(c *collector, s *model.SnapshotsConfig) {
	if s == nil {
		return
	}
	if v := s.Interval; v != "" && v != "0" {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			c.addf("snapshots.interval", "%q is not a duration; write it like 12h or 30m, or \"0\" for no scheduled snapshots", v)
		case d != 0 && (d < model.MinSnapshotInterval || d > model.MaxSnapshotInterval):
			c.addf("snapshots.interval", "%s is out of range; give a duration between %s and %s, or \"0\" for no scheduled snapshots",
				v, fmtDuration(model.MinSnapshotInterval), fmtDuration(model.MaxSnapshotInterval))
		}
	}
	if s.Keep < 0 || s.Keep > model.MaxSnapshotKeep {
		c.addf("snapshots.keep", "%d is out of range; keep between 1 and %d snapshots (0 keeps the default, %d)", s.Keep, model.MaxSnapshotKeep, model.DefaultSnapshotKeep)
	}
}
