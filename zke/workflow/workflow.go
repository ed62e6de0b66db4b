// Package workflow runs an installer operation as a flow of named,
// idempotent steps (seed 004): each step is reported as step k/N with a
// percentage, its log lines go to the operation's sink, and a checkpoint is
// taken after every finished step, with the fingerprint of the inputs the
// step acted on, so that a cancelled or crashed run can be resumed.
//
// Resuming skips what is verifiably done (skip.go): a step whose recorded
// fingerprint equals its current one and whose cheap Verify passes is
// reported "skipped (verified)" instead of run; every other step runs
// again, and steps are idempotent, re-checking what earlier runs did. A
// step that runs past its deadline is reported stalled (deadline.go),
// with what it waits for, and goes on until its own bounded waits give up.
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
	// Fingerprint hashes exactly the inputs the step acts on, as they
	// are when it is called (it is called after Run succeeded, to be
	// recorded, and before a resumed run decides whether to skip the
	// step). It must be cheap and do no I/O. nil: the step always runs.
	Fingerprint func() (string, error)
	// Verify checks, cheaply and in one round, that the effect of the
	// step is still in place, and rebuilds whatever in-memory results
	// later steps take from Run. It runs under a short timeout
	// (RunOptions.VerifyTimeout). nil: the step always runs.
	Verify func(ctx context.Context, r *Reporter) error
	// Deadline is how long Run may take before the step is reported
	// stalled (Sink.Stalled); 0 never reports it.
	Deadline time.Duration
}

// RunOptions tunes Run; the zero value runs every step.
type RunOptions struct {
	// Done maps a step name to the fingerprint an earlier run of the
	// same operation recorded when it finished that step (the
	// fingerprints its checkpoints carried). Steps not in Done run.
	Done map[string]string
	// Clock stamps log lines and stalls; nil is time.Now.
	Clock func() time.Time
	// VerifyTimeout bounds one step's Verify; 0 is DefaultVerifyTimeout.
	VerifyTimeout time.Duration
	// StallRepeat is the least time between two Stalled calls for one
	// step; 0 is DefaultStallRepeat.
	StallRepeat time.Duration
}

// DefaultVerifyTimeout bounds a Verify: one round of cheap checks on
// every node (each bounded itself by a few seconds) fits with room to
// spare, and a resume whose checks hang runs the step instead.
const DefaultVerifyTimeout = time.Minute

// withDefaults fills the zero fields of o.
func (o RunOptions) withDefaults() RunOptions {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.VerifyTimeout <= 0 {
		o.VerifyTimeout = DefaultVerifyTimeout
	}
	if o.StallRepeat <= 0 {
		o.StallRepeat = DefaultStallRepeat
	}
	return o
}

// Progress is one progress frame of an operation (SPEC §7).
type Progress struct {
	Step    string `json:"step"`
	Index   int    `json:"index"`
	Total   int    `json:"total"`
	Percent int    `json:"percent"`
	Node    string `json:"node,omitempty"`
	Message string `json:"message,omitempty"`
	// Skipped marks the frame of a step that a resumed run did not redo:
	// an earlier run finished it with the same inputs and its effect was
	// verified to be still in place.
	Skipped bool `json:"skipped,omitempty"`
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
	// Checkpoint records that step finished (or was skipped, verified),
	// with the fingerprint of the inputs it acted on ("" when the step
	// has none): handed back in RunOptions.Done, it lets a resumed run
	// skip the step. An error stops the run, since a resume could no
	// longer tell how far it got.
	Checkpoint(ctx context.Context, step, fingerprint string) error
	// Stalled reports that the running step passed its deadline, and
	// again when what it waits for changes.
	Stalled(s Stall)
}

// Run runs steps in order until one fails or ctx ends, skipping the steps
// that opts.Done shows an earlier run finished and that verify as still
// done. It returns nil, a *StepError naming the failed step, or an error
// matching ctx.Err(). It returns only after every goroutine it started
// has ended.
func Run(ctx context.Context, steps []Step, sink Sink, opts RunOptions) error {
	opts = opts.withDefaults()
	total := len(steps)
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("before step %s: %w", st.Name, err)
		}
		r := newReporter(sink, opts.Clock, st.Name, i+1, total)
		fp, skip, err := verifiedDone(ctx, st, r, opts)
		if err != nil {
			return fmt.Errorf("step %s: %w", st.Name, err)
		}
		if skip {
			r.skipped()
		} else {
			if err := runStep(ctx, st, r, opts); err != nil {
				return err
			}
			fp = fingerprintAfter(st, r)
		}
		if err := sink.Checkpoint(ctx, st.Name, fp); err != nil {
			return fmt.Errorf("checkpoint after step %s: %w", st.Name, err)
		}
	}
	return nil
}

// runStep runs st, watching its deadline while it runs.
func runStep(ctx context.Context, st Step, r *Reporter, opts RunOptions) error {
	r.Report("", "started")
	stop := watchDeadline(ctx, r, st.Deadline, opts.StallRepeat, opts.Clock())
	err := st.Run(ctx, r)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("step %s: %w", st.Name, errors.Join(ctx.Err(), err))
		}
		r.log("error", nodeOf(err), err.Error())
		return &StepError{Step: st.Name, Index: r.index, Err: err}
	}
	r.finish()
	r.Report("", "done")
	return nil
}
