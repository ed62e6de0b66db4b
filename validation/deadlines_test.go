package validation

import (
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestValidateStepDeadlines(t *testing.T) {
	tests := []struct {
		name      string
		deadlines map[string]string
		want      []string
		reason    string
	}{
		{"none ok", nil, nil, ""},
		{"empty map ok", map[string]string{}, nil, ""},
		{"images 30m ok", map[string]string{model.StepImages: "30m"}, nil, ""},
		{"every step ok", func() map[string]string {
			m := map[string]string{}
			for _, s := range model.StepNames() {
				m[s] = "10m"
			}
			return m
		}(), nil, ""},
		{"lower bound ok", map[string]string{model.StepEtcd: "30s"}, nil, ""},
		{"upper bound ok", map[string]string{model.StepEtcd: "24h"}, nil, ""},
		{"compound duration ok", map[string]string{model.StepAddons: "1h30m"}, nil, ""},
		{"unknown step", map[string]string{"bootstrap": "10m"}, []string{"stepDeadlines.bootstrap"}, `unknown step "bootstrap"`},
		{"step name is case-sensitive", map[string]string{"Images": "10m"}, []string{`stepDeadlines["Images"]`}, "unknown step"},
		{"empty key", map[string]string{"": "10m"}, []string{`stepDeadlines[""]`}, "unknown step"},
		{"empty value", map[string]string{model.StepImages: ""}, []string{"stepDeadlines.images"}, "is empty"},
		{"not a duration", map[string]string{model.StepImages: "ten minutes"}, []string{"stepDeadlines.images"}, "not a duration"},
		{"number without unit", map[string]string{model.StepImages: "600"}, []string{"stepDeadlines.images"}, "not a duration"},
		{"below 30s", map[string]string{model.StepImages: "29s"}, []string{"stepDeadlines.images"}, "between 30s and 24h"},
		{"zero", map[string]string{model.StepImages: "0s"}, []string{"stepDeadlines.images"}, "out of range"},
		{"negative", map[string]string{model.StepImages: "-5m"}, []string{"stepDeadlines.images"}, "out of range"},
		{"above 24h", map[string]string{model.StepImages: "24h1s"}, []string{"stepDeadlines.images"}, "between 30s and 24h"},
		{"several, sorted by step", map[string]string{"workers": "1s", "clean": "x", "zzz": "1m"},
			[]string{"stepDeadlines.clean", "stepDeadlines.workers", "stepDeadlines.zzz"}, "not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			c.StepDeadlines = tt.deadlines
			checkViolations(t, ValidateCreate(c), tt.want, tt.reason)

			// An update may set or change them, under the same rules.
			old := validCluster(t)
			old.StepDeadlines = map[string]string{model.StepEtcd: "5m"}
			newCfg := cloneConfig(old)
			newCfg.StepDeadlines = tt.deadlines
			checkViolations(t, ValidateUpdate(old, newCfg), tt.want, tt.reason)
		})
	}
}

func TestFmtDuration(t *testing.T) {
	for d, want := range map[string]string{"30s": "30s", "24h": "24h", "90m": "1h30m", "1m30s": "1m30s", "2m": "2m"} {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmtDuration(dur); got != want {
			t.Errorf("fmtDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
