package clustermanager

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// installSink records an installer run's progress: log lines and progress
// frames go to the operation log (and its followers); the step that starts
// is saved in the last operation with an ETA; checkpoints save the
// installer's state and the finished step's duration, so a crash resumes
// from there; a stall is saved, published and logged.
type installSink struct {
	m *Manager
	e *entry
	r *opRun

	mu        sync.Mutex
	progress  workflow.Progress
	stepStart time.Time // when the running step began
}

func (m *Manager) newInstallSink(e *entry, r *opRun) *installSink {
	return &installSink{m: m, e: e, r: r}
}

// Progress logs p and, when p starts a step, saves that step as the
// running one in the record's last operation: between two checkpoints the
// cluster then shows the step that is running, not the last one that
// finished.
func (s *installSink) Progress(p workflow.Progress) {
	s.mu.Lock()
	started := p.Step != s.progress.Step || p.Index != s.progress.Index
	s.progress = p
	if started {
		s.stepStart = s.m.opts.Clock()
	}
	s.mu.Unlock()
	f := progressFrame(p)
	if started {
		s.m.log.Info("operation step started", "cluster", s.e.name, "operation", string(s.r.kind.typ), "step", p.Step, "index", p.Index, "total", p.Total, "node", p.Node)
		// Saved before the frame is logged: a follower who sees the
		// step start finds it in the cluster too.
		eta, err := s.saveRunningStep(p)
		if err != nil {
			s.m.log.Warn("running step not saved", "cluster", s.e.name, "step", p.Step, "err", err)
		} else {
			s.publishProgress(fmt.Sprintf("step %d/%d %s started (%d%%)", p.Index, p.Total, p.Step, p.Percent))
		}
		f.ETA = eta
	}
	s.r.log.append(s.r.logID, f)
}

// saveRunningStep records p's step, index, percentage and the estimated
// time left in the running last operation, and clears a stall of the step
// before. It returns the estimate.
func (s *installSink) saveRunningStep(p workflow.Progress) (*int, error) {
	var eta *int
	err := s.m.repo.edit(s.e, func(next *record) bool {
		op := next.LastOperation
		if !op.running() || op.Type != s.r.kind.typ || (op.Step == p.Step && op.Index == p.Index) {
			return false
		}
		op.Step, op.Index, op.Total = p.Step, p.Index, p.Total
		op.Percent = max(op.Percent, p.Percent)
		op.Stalled = nil
		eta = s.m.eta.estimate(op.Type, p.Index, p.Total, len(next.nodes()), 0)
		op.ETA = eta
		return true
	})
	return eta, err
}

func (s *installSink) Log(l workflow.Line) { s.r.log.append(s.r.logID, lineFrame(l)) }

// Checkpoint writes the installer state, the finished step and its
// duration in one transaction. It is not a state transition: the cluster
// stays in its state.
func (s *installSink) Checkpoint(ctx context.Context, step string, st zke.State) error {
	s.mu.Lock()
	p, began := s.progress, s.stepStart
	s.mu.Unlock()
	took := s.m.opts.Clock().Sub(began)
	if step != "" {
		s.m.log.Info("operation step finished", "cluster", s.e.name, "operation", string(s.r.kind.typ), "step", step, "skipped", p.Skipped, "duration", took.Round(time.Millisecond).String())
		if !p.Skipped && !began.IsZero() {
			s.m.opts.Observer.StepEnded(string(s.r.kind.typ), step, took)
		}
	}
	err := s.m.repo.edit(s.e, func(next *record) bool {
		state := st.Clone()
		next.secrets.ZKE = &state
		op := next.LastOperation
		if step == "" || !op.running() || op.Type != s.r.kind.typ {
			return true
		}
		op.Step, op.Index, op.Total, op.Percent = step, p.Index, p.Total, p.Percent
		op.Stalled = nil
		timing := StepTiming{Name: step, Index: p.Index, Seconds: took.Seconds(), Skipped: p.Skipped}
		op.Steps = append(withoutStep(op.Steps, p.Index), timing)
		if p.Index < p.Total {
			op.ETA = s.m.eta.estimate(op.Type, p.Index+1, p.Total, len(next.nodes()), 0)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("checkpoint %s of cluster %s: %w", step, s.e.name, err)
	}
	_ = s.r.log.flush()
	if step != "" {
		s.publishProgress(fmt.Sprintf("step %d/%d %s finished (%d%%)", p.Index, p.Total, step, p.Percent))
	}
	return nil
}

// publishProgress announces, once the running operation's step is saved,
// that it moved: a list (the web console's) re-reads the cluster then,
// instead of polling it or following every cluster's log.
func (s *installSink) publishProgress(reason string) {
	s.e.publish(s.m.opts.Bus, pubsub.Event{
		Kind: pubsub.ClusterOperationProgress, Cluster: s.e.name, Status: string(s.e.machine.Current()),
		Reason: reason, Time: s.m.opts.Clock().UTC(),
	})
}

// withoutStep drops the timing of step index (a resumed run that redoes
// it records it anew).
func withoutStep(steps []StepTiming, index int) []StepTiming {
	out := steps[:0:0]
	for _, st := range steps {
		if st.Index != index {
			out = append(out, st)
		}
	}
	return out
}

// Stalled saves the stall in the running last operation, publishes a
// ClusterOperationStalled event and logs a stalled frame. The operation
// goes on: its own bounded waits end it.
func (s *installSink) Stalled(st workflow.Stall) {
	err := s.m.repo.edit(s.e, func(next *record) bool {
		op := next.LastOperation
		if !op.running() || op.Type != s.r.kind.typ {
			return false
		}
		c := st
		op.Stalled = &c
		return true
	})
	if err != nil {
		s.m.log.Warn("stall not saved", "cluster", s.e.name, "step", st.Step, "err", err)
	}
	msg := stallText(st)
	s.m.log.Warn("operation stalled", "cluster", s.e.name, "operation", string(s.r.kind.typ), "step", st.Step, "node", st.Node, "waitingFor", st.WaitingFor, "lastError", st.LastError)
	s.e.publish(s.m.opts.Bus, pubsub.Event{
		Kind: pubsub.ClusterOperationStalled, Cluster: s.e.name, Status: string(s.e.machine.Current()),
		Reason: msg, Time: s.m.opts.Clock().UTC(),
	})
	s.r.log.append(s.r.logID, Frame{Type: FrameStalled, Level: "warn", Step: st.Step, Node: st.Node, Message: msg})
}

// stallText says in one line what a stalled step waits for.
func stallText(st workflow.Stall) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s is past its deadline", st.Step)
	if st.Node != "" {
		fmt.Fprintf(&b, " on node %s", st.Node)
	}
	if st.WaitingFor != "" {
		fmt.Fprintf(&b, ", waiting for %s", st.WaitingFor)
	}
	if st.LastError != "" {
		fmt.Fprintf(&b, "; last error: %s", st.LastError)
	}
	if st.Hint != "" {
		fmt.Fprintf(&b, "; %s", st.Hint)
	}
	return b.String()
}
