package workflow

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// skipStep is a step with a fingerprint and a verification whose answers
// the test sets; it counts its runs and verifications.
type skipStep struct {
	name      string
	fp        string
	fpErr     error
	verifyErr error
	noFP      bool
	noVerify  bool
	ran       int
	verified  int
	// runSetsFP, when not empty, is the fingerprint after Run: Run
	// changed the step's inputs.
	runSetsFP string
}

func (s *skipStep) step() Step {
	st := Step{Name: s.name, Run: func(ctx context.Context, r *Reporter) error {
		s.ran++
		if s.runSetsFP != "" {
			s.fp = s.runSetsFP
		}
		return nil
	}}
	if !s.noFP {
		st.Fingerprint = func() (string, error) { return s.fp, s.fpErr }
	}
	if !s.noVerify {
		st.Verify = func(ctx context.Context, r *Reporter) error { s.verified++; return s.verifyErr }
	}
	return st
}

func TestRunSkipsVerifiedSteps(t *testing.T) {
	tests := []struct {
		name         string
		step         skipStep
		done         map[string]string
		wantRan      bool
		wantVerified int
		wantFP       string
		wantWarn     string // substring of a warn line; "" = no warn line
	}{
		{"fingerprint matches and verify passes: skipped", skipStep{fp: "a"}, map[string]string{"s": "a"}, false, 1, "a", ""},
		{"fingerprint differs: runs", skipStep{fp: "b"}, map[string]string{"s": "a"}, true, 0, "b", ""},
		{"verify fails: runs with a warning", skipStep{fp: "a", verifyErr: &NodeError{Node: "n1", Err: errors.New("etcd member unhealthy")}},
			map[string]string{"s": "a"}, true, 1, "a", "etcd member unhealthy"},
		{"no fingerprint: always runs", skipStep{noFP: true}, map[string]string{"s": "a"}, true, 0, "", ""},
		{"no verify: always runs", skipStep{fp: "a", noVerify: true}, map[string]string{"s": "a"}, true, 0, "a", ""},
		{"not done before: runs", skipStep{fp: "a"}, nil, true, 0, "a", ""},
		{"empty recorded fingerprint: runs", skipStep{fp: ""}, map[string]string{"s": ""}, true, 0, "", ""},
		{"fingerprint fails: runs with a warning", skipStep{fp: "a", fpErr: errors.New("no certificates yet")},
			map[string]string{"s": "a"}, true, 0, "", "no certificates yet"},
		{"checkpoint carries the fingerprint after the run", skipStep{fp: "old", runSetsFP: "new"}, nil, true, 0, "new", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.step
			s.name = "s"
			first := &skipStep{name: "first", noFP: true}
			sink := &recordingSink{}
			err := Run(context.Background(), []Step{first.step(), s.step()}, sink, RunOptions{Done: tt.done})
			if err != nil {
				t.Fatal(err)
			}
			if (s.ran == 1) != tt.wantRan || s.verified != tt.wantVerified {
				t.Errorf("ran %d verified %d, want ran %v verified %d", s.ran, s.verified, tt.wantRan, tt.wantVerified)
			}
			if !slices.Equal(sink.checkpoints, []string{"first", "s"}) || sink.fingerprints["s"] != tt.wantFP || sink.fingerprints["first"] != "" {
				t.Errorf("checkpoints %v fingerprints %v, want s checkpointed with %q", sink.checkpoints, sink.fingerprints, tt.wantFP)
			}
			var warns []string
			for _, l := range sink.lines {
				if l.Level == "warn" {
					warns = append(warns, l.Message)
				}
			}
			switch {
			case tt.wantWarn == "" && len(warns) > 0:
				t.Errorf("unexpected warnings %q", warns)
			case tt.wantWarn != "" && (len(warns) == 0 || !strings.Contains(warns[0], tt.wantWarn) || !strings.Contains(warns[0], "running it again")):
				t.Errorf("warnings %q, want the first saying %q and that the step runs again", warns, tt.wantWarn)
			}
			var skipped []Progress
			for _, p := range sink.progress {
				if p.Step == "s" && p.Skipped {
					skipped = append(skipped, p)
				}
			}
			if tt.wantRan {
				if len(skipped) > 0 {
					t.Errorf("a step that ran has skipped frames %+v", skipped)
				}
				return
			}
			if len(skipped) != 1 || skipped[0].Message != "skipped (verified)" || skipped[0].Percent != 100 || skipped[0].Index != 2 || skipped[0].Total != 2 {
				t.Errorf("skipped frames %+v, want one at 100%% saying skipped (verified)", skipped)
			}
			for _, p := range sink.progress {
				if p.Step == "s" && !p.Skipped {
					t.Errorf("a skipped step has another frame %+v", p)
				}
			}
			if !slices.ContainsFunc(sink.lines, func(l Line) bool { return l.Step == "s" && l.Message == SkippedMessage }) {
				t.Errorf("no log line says the step was skipped: %+v", sink.lines)
			}
		})
	}
}

// TestRunResumeAtLastStep: an install resumed at its last step redoes none
// of the earlier ones, even after one that ran (a step without a
// fingerprint, like connect).
func TestRunResumeAtLastStep(t *testing.T) {
	connect := &skipStep{name: "connect", noFP: true}
	certs := &skipStep{name: "certificates", fp: "c"}
	etcd := &skipStep{name: "etcd", fp: "e"}
	last := &skipStep{name: "kubeconfig", fp: "k"}
	sink := &recordingSink{}
	done := map[string]string{"certificates": "c", "etcd": "e"}
	if err := Run(context.Background(), []Step{connect.step(), certs.step(), etcd.step(), last.step()}, sink, RunOptions{Done: done}); err != nil {
		t.Fatal(err)
	}
	if connect.ran != 1 || certs.ran != 0 || etcd.ran != 0 || last.ran != 1 {
		t.Errorf("runs connect %d certificates %d etcd %d kubeconfig %d, want 1 0 0 1", connect.ran, certs.ran, etcd.ran, last.ran)
	}
	want := map[string]string{"connect": "", "certificates": "c", "etcd": "e", "kubeconfig": "k"}
	for k, v := range want {
		if sink.fingerprints[k] != v {
			t.Errorf("fingerprints %v, want %v", sink.fingerprints, want)
			break
		}
	}
	lastPct := 0
	for _, p := range sink.progress {
		if p.Percent < lastPct {
			t.Errorf("progress goes backwards at %+v", p)
		}
		lastPct = p.Percent
	}
}

func TestRunVerifyIsBounded(t *testing.T) {
	s := Step{
		Name:        "images",
		Fingerprint: func() (string, error) { return "x", nil },
		Verify: func(ctx context.Context, r *Reporter) error {
			<-ctx.Done() // a check that hangs until its timeout
			return ctx.Err()
		},
	}
	ran := false
	s.Run = func(context.Context, *Reporter) error { ran = true; return nil }
	sink := &recordingSink{}
	err := Run(context.Background(), []Step{s}, sink, RunOptions{Done: map[string]string{"images": "x"}, VerifyTimeout: 10 * time.Millisecond})
	if err != nil || !ran {
		t.Fatalf("Run = %v, ran %v: a verification that times out must run the step", err, ran)
	}
}

func TestRunCancelledDuringVerify(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := Step{
		Name:        "etcd",
		Fingerprint: func() (string, error) { return "x", nil },
		Verify: func(ctx context.Context, r *Reporter) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		},
		Run: func(context.Context, *Reporter) error { t.Error("ran after cancel"); return nil },
	}
	sink := &recordingSink{}
	err := Run(ctx, []Step{s}, sink, RunOptions{Done: map[string]string{"etcd": "x"}})
	if !errors.Is(err, context.Canceled) || len(sink.checkpoints) != 0 {
		t.Fatalf("Run = %v, checkpoints %v; want context.Canceled and none", err, sink.checkpoints)
	}
}
