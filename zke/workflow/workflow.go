// Package workflow runs an installer operation as a flow of named,
// idempotent steps (seed 004): each step is reported as step k/N with a
// percentage, its log lines go to the operation's sink, and a checkpoint is
// taken after every finished step so that a cancelled or crashed run can
// be resumed. Resuming re-runs every step — they are idempotent and
// re-check what earlier runs did instead of trusting it — but checkpoints
// tell the user how far the last run got.
package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Step is one named, idempotent unit of an operation.
type Step struct {
	Name string
	// Run does the step. It must be idempotent, honour ctx, and bound
	// every wait.
	Run func(ctx context.Context, r *Reporter) error
}

// Progress is one progress frame of an operation (SPEC §7).
type Progress struct {
	Step    string `json:"step"`
	Index   int    `json:"index"`
	Total   int    `json:"total"`
	Percent int    `json:"percent"`
	Node    string `json:"node,omitempty"`
	Message string `json:"message,omitempty"`
}

// Line is one log line of an operation.
type Line struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Step    string    `json:"step,omitempty"`
	Node    string    `json:"node,omitempty"`
	Message string    `json:"message"`
}

// Sink receives an operation's progress, log lines and checkpoints. Its
// methods are called from the workflow's goroutines and must not block
// for long.
type Sink interface {
	Progress(p Progress)
	Log(l Line)
	// Checkpoint records that step finished; an error stops the run,
	// since a resume could no longer tell how far it got.
	Checkpoint(ctx context.Context, step string) error
}

// Run runs steps in order until one fails or ctx ends. It returns nil, a
// *StepError naming the failed step, or an error matching ctx.Err().
func Run(ctx context.Context, steps []Step, sink Sink, clock func() time.Time) error {
	if clock == nil {
		clock = time.Now
	}
	total := len(steps)
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("before step %s: %w", st.Name, err)
		}
		r := &Reporter{sink: sink, clock: clock, step: st.Name, index: i + 1, total: total}
		r.Report("", "started")
		err := st.Run(ctx, r)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("step %s: %w", st.Name, errors.Join(ctx.Err(), err))
			}
			r.log("error", nodeOf(err), err.Error())
			return &StepError{Step: st.Name, Index: i + 1, Err: err}
		}
		r.fraction = 1
		r.Report("", "done")
		if err := sink.Checkpoint(ctx, st.Name); err != nil {
			return fmt.Errorf("checkpoint after step %s: %w", st.Name, err)
		}
	}
	return nil
}

// Reporter is a running step's handle for progress and logs.
type Reporter struct {
	sink     Sink
	clock    func() time.Time
	step     string
	index    int
	total    int
	fraction float64
}

// Step returns the running step's name.
func (r *Reporter) Step() string { return r.step }

// Report emits a progress frame for the step, with a message about node
// (empty for the whole cluster), and logs the message.
func (r *Reporter) Report(node, msg string) {
	pct := int(100 * (float64(r.index-1) + r.fraction) / float64(r.total))
	r.sink.Progress(Progress{Step: r.step, Index: r.index, Total: r.total, Percent: pct, Node: node, Message: msg})
	r.log("info", node, msg)
}

// Advance records that the step is frac (0..1) done and reports msg.
func (r *Reporter) Advance(frac float64, node, msg string) {
	r.fraction = min(max(frac, r.fraction), 0.99)
	r.Report(node, msg)
}

// Logf logs a line for node without a progress frame.
func (r *Reporter) Logf(node, format string, args ...any) {
	r.log("info", node, fmt.Sprintf(format, args...))
}

// Warnf logs a warning for node.
func (r *Reporter) Warnf(node, format string, args ...any) {
	r.log("warn", node, fmt.Sprintf(format, args...))
}

func (r *Reporter) log(level, node, msg string) {
	r.sink.Log(Line{Time: r.clock().UTC(), Level: level, Step: r.step, Node: node, Message: msg})
}
