package zke

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

func TestDefaultDeadlinesCoverEveryStep(t *testing.T) {
	got := slices.Sorted(maps.Keys(defaultDeadlines()))
	want := slices.Sorted(slices.Values(model.StepNames()))
	if !slices.Equal(got, want) {
		t.Fatalf("default deadlines for %v, want every step %v", got, want)
	}
	for step, d := range defaultDeadlines() {
		if d < model.MinStepDeadline || d > model.MaxStepDeadline {
			t.Errorf("default deadline of %s is %s, outside what a cluster may set", step, d)
		}
	}
}

func TestStepDeadlines(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		want      map[string]time.Duration // checked entries
		wantErr   string
	}{
		{"defaults", nil, map[string]time.Duration{stepImages: deadlineImages, stepEtcd: deadlineEtcd}, ""},
		{"images 30m", map[string]string{stepImages: "30m"}, map[string]time.Duration{stepImages: 30 * time.Minute, stepEtcd: deadlineEtcd}, ""},
		{"unknown step", map[string]string{"bootstrap": "1m"}, nil, "stepDeadlines.bootstrap: unknown step"},
		{"bad duration", map[string]string{stepEtcd: "soon"}, nil, "stepDeadlines.etcd"},
		{"too short", map[string]string{stepEtcd: "1s"}, nil, "between 30s and 24h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.StepDeadlines = tt.overrides
			got, err := stepDeadlines(cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for step, d := range tt.want {
				if got[step] != d {
					t.Errorf("deadline of %s = %s, want %s", step, got[step], d)
				}
			}
		})
	}
}

// TestStepsCarryDeadlinesAndChecks: every step has its deadline; the
// steps that build in-memory state for later ones (connect, preflight)
// and those with nothing to check (kubeconfig, clean) always run; every
// other has both a fingerprint and a verification.
func TestStepsCarryDeadlinesAndChecks(t *testing.T) {
	cfg := testConfig()
	cfg.StepDeadlines = map[string]string{stepWorkers: "45m"}
	r := testRun(t, cfg, nil)
	alwaysRun := []string{stepConnect, stepPreflight, stepKubeconfig, stepClean}
	for name, steps := range map[string][]workflow.Step{"create": r.createSteps(), "update": r.updateSteps(), "remove": r.removeSteps(false)} {
		for _, st := range steps {
			if st.Deadline <= 0 {
				t.Errorf("%s: step %s has no deadline", name, st.Name)
			}
			if st.Name == stepWorkers && st.Deadline != 45*time.Minute {
				t.Errorf("%s: workers deadline %s, want the cluster's 45m", name, st.Deadline)
			}
			skippable := st.Fingerprint != nil && st.Verify != nil
			if skippable == slices.Contains(alwaysRun, st.Name) || (st.Fingerprint == nil) != (st.Verify == nil) {
				t.Errorf("%s: step %s fingerprint %v verify %v", name, st.Name, st.Fingerprint != nil, st.Verify != nil)
			}
		}
	}
}

// TestRunningStepForgetsItsFingerprint: a step that runs drops the
// fingerprint an earlier run recorded before it does anything, so that an
// interruption before its checkpoint leaves no claim that it is done.
func TestRunningStepForgetsItsFingerprint(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	r.state.Fingerprints = map[string]string{stepEtcd: "old", stepImages: "i"}
	var during map[string]string
	steps := r.prepare([]workflow.Step{{Name: stepEtcd, Run: func(context.Context, *workflow.Reporter) error {
		during = r.snapshot().Fingerprints
		return errors.New("interrupted")
	}}})
	_ = steps[0].Run(context.Background(), nil)
	if _, ok := during[stepEtcd]; ok || during[stepImages] != "i" {
		t.Fatalf("fingerprints while the step runs %v, want only the other step's", during)
	}
}
