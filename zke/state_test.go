package zke

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

func TestStateFingerprints(t *testing.T) {
	applied := testConfig()
	applied.StepDeadlines = map[string]string{stepImages: "30m"}
	s := State{Checkpoints: []string{stepConnect, stepImages}, Fingerprints: map[string]string{stepImages: "abc"}, Applied: &applied}
	c := s.Clone()
	c.Fingerprints[stepImages] = "changed"
	c.Applied.StepDeadlines[stepImages] = "1h"
	if s.Fingerprints[stepImages] != "abc" || s.Applied.StepDeadlines[stepImages] != "30m" {
		t.Fatalf("Clone shares maps: %v %v", s.Fingerprints, s.Applied.StepDeadlines)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"fingerprints":{"images":"abc"}`) {
		t.Errorf("JSON %s lacks the fingerprints", b)
	}
	if b, _ := json.Marshal(State{}); strings.Contains(string(b), "fingerprints") {
		t.Errorf("empty fingerprints are written: %s", b)
	}
	s.ResetProgress()
	if s.Checkpoints != nil || s.Fingerprints != nil || s.Applied == nil {
		t.Errorf("after ResetProgress: %+v", s)
	}
}

// recordingZkeSink records what a run hands its caller.
type recordingZkeSink struct {
	states []State
	stalls []workflow.Stall
}

func (s *recordingZkeSink) Progress(workflow.Progress) {}
func (s *recordingZkeSink) Log(workflow.Line)          {}
func (s *recordingZkeSink) Checkpoint(_ context.Context, _ string, st State) error {
	s.states = append(s.states, st)
	return nil
}
func (s *recordingZkeSink) Stalled(st workflow.Stall) { s.stalls = append(s.stalls, st) }

func TestCheckpointRecordsFingerprints(t *testing.T) {
	sink := &recordingZkeSink{}
	r := testRun(t, testConfig(), nil)
	r.sink = sink
	ws := r.workflowSink()
	ctx := context.Background()
	for _, c := range []struct{ step, fp string }{{stepConnect, ""}, {stepImages, "i1"}, {stepEtcd, "e"}, {stepImages, "i2"}, {stepEtcd, ""}} {
		if err := ws.Checkpoint(ctx, c.step, c.fp); err != nil {
			t.Fatal(err)
		}
	}
	last := sink.states[len(sink.states)-1]
	if !slices.Equal(last.Checkpoints, []string{stepConnect, stepImages, stepEtcd}) {
		t.Errorf("checkpoints %v", last.Checkpoints)
	}
	if len(last.Fingerprints) != 1 || last.Fingerprints[stepImages] != "i2" {
		t.Errorf("fingerprints %v, want images=i2 only (etcd's dropped when it has none)", last.Fingerprints)
	}
	ws.Stalled(workflow.Stall{Step: stepEtcd, Node: "n1"})
	if len(sink.stalls) != 1 || sink.stalls[0].Node != "n1" {
		t.Errorf("stalls %+v not forwarded", sink.stalls)
	}
}

func TestRunOptionsResume(t *testing.T) {
	prev := State{Fingerprints: map[string]string{stepImages: "i"}}
	r := testRun(t, testConfig(), nil)
	opts := r.runOptions(prev)
	if opts.Done[stepImages] != "i" || opts.Clock == nil {
		t.Fatalf("options %+v do not resume from prev", opts)
	}
	opts.Done[stepImages] = "x"
	if prev.Fingerprints[stepImages] != "i" {
		t.Fatal("the workflow shares prev's map")
	}
}

func TestNewRunRefusesBadDeadlines(t *testing.T) {
	in, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.StepDeadlines = map[string]string{"nope": "1m"}
	_, err = in.newRun(cfg, State{}, nil)
	if err == nil || !strings.Contains(err.Error(), "stepDeadlines.nope") || !errors.Is(err, workflow.ErrUserFixable) {
		t.Fatalf("newRun = %v", err)
	}
}
