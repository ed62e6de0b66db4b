package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// validateStepDeadlines checks the per-step deadline overrides: every key
// a step of zke's operations, every value a Go duration between
// model.MinStepDeadline and model.MaxStepDeadline. Keys are checked in
// sorted order, so the report does not depend on map order.
func validateStepDeadlines(c *collector, deadlines map[string]string) {
	steps := model.StepNames()
	for _, k := range slices.Sorted(maps.Keys(deadlines)) {
		field := stepDeadlineField(k)
		if !slices.Contains(steps, k) {
			c.addf(field, "unknown step %q; give deadlines for %s", k, orList(steps))
			continue
		}
		v := deadlines[k]
		d, err := time.ParseDuration(v)
		switch {
		case v == "":
			c.addf(field, "is empty; give a duration like 30m, or remove the entry to keep the default")
		case err != nil:
			c.addf(field, "%q is not a duration; write it like 90s, 30m or 2h", v)
		case d < model.MinStepDeadline || d > model.MaxStepDeadline:
			c.addf(field, "%s is out of range; give a duration between %s and %s", v, fmtDuration(model.MinStepDeadline), fmtDuration(model.MaxStepDeadline))
		}
	}
}

// stepDeadlineField is the path of stepDeadlines[k]: stepDeadlines.images
// for a plain key, or stepDeadlines["..."] for a key that would not read
// as one.
func stepDeadlineField(k string) string {
	if k != "" && !strings.ContainsFunc(k, func(r rune) bool { return !isLowerAlnum(r) && r != '-' && r != '_' }) {
		return "stepDeadlines." + k
	}
	return fmt.Sprintf("stepDeadlines[%q]", k)
}

// fmtDuration writes d as people write it: 30s, 24h (not 24h0m0s).
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
