package workflow

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Reporter is a running step's handle for progress, logs and what the
// step waits for. It is safe for concurrent use by the step's goroutines.
type Reporter struct {
	sink  Sink
	clock func() time.Time
	step  string
	index int
	total int
	// changed gets a token (never blocking) whenever what the step waits
	// for may have changed; the deadline watcher reads it.
	changed chan struct{}

	mu       sync.Mutex
	fraction float64
	// waits are the bounded waits in progress, by node ("" for the
	// whole cluster).
	waits map[string]activeWait
	// seq orders waits and reports: the newest is shown in a stall.
	seq uint64
	// last is the step's latest report, shown when nothing waits.
	last activeWait
}

// activeWait is one wait in progress, or the latest report.
type activeWait struct {
	node, what, lastErr, hint string
	seq                       uint64
}

func newReporter(sink Sink, clock func() time.Time, step string, index, total int) *Reporter {
	return &Reporter{sink: sink, clock: clock, step: step, index: index, total: total,
		changed: make(chan struct{}, 1), waits: map[string]activeWait{}}
}

// Step returns the running step's name.
func (r *Reporter) Step() string { return r.step }

// Report emits a progress frame for the step, with a message about node
// (empty for the whole cluster), and logs the message.
func (r *Reporter) Report(node, msg string) {
	r.mu.Lock()
	pct := r.percentLocked()
	r.seq++
	r.last = activeWait{node: node, what: msg, seq: r.seq}
	r.mu.Unlock()
	r.sink.Progress(Progress{Step: r.step, Index: r.index, Total: r.total, Percent: pct, Node: node, Message: msg})
	r.log("info", node, msg)
	r.notify()
}

// Advance records that the step is frac (0..1) done and reports msg.
func (r *Reporter) Advance(frac float64, node, msg string) {
	r.mu.Lock()
	r.fraction = min(max(frac, r.fraction), 0.99)
	r.mu.Unlock()
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

// Waiting tells the step's reporter that a bounded wait on node ("" for
// the whole cluster) waits for what, and the last error it saw (nil when
// none yet); an empty what says the node's wait has ended. A stall of
// the step shows the newest wait in progress, with the Hint of the first
// *NodeError in lastErr (a *NodeError at the top shows as its cause: the
// stall names node and hint apart). It logs nothing (waits poll every second); it is
// cheap and never blocks. A nil Reporter ignores it, so waits can run
// outside a step (tests).
func (r *Reporter) Waiting(node, what string, lastErr error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	old, had := r.waits[node]
	changed := false
	if what == "" {
		if had {
			delete(r.waits, node)
			changed = true
		}
	} else {
		w := activeWait{node: node, what: what}
		if lastErr != nil {
			w.lastErr = lastErr.Error()
			var ne *NodeError
			if errors.As(lastErr, &ne) {
				w.hint = ne.Hint
			}
			if top, ok := lastErr.(*NodeError); ok && top.Err != nil {
				// The stall names the node and the hint apart.
				w.lastErr = top.Err.Error()
			}
		}
		if !had || old.what != w.what || old.lastErr != w.lastErr || old.hint != w.hint {
			r.seq++
			w.seq = r.seq
			r.waits[node] = w
			changed = true
		}
	}
	r.mu.Unlock()
	if changed {
		r.notify()
	}
}

// stall describes the step for a Stalled report: the newest wait in
// progress or, when nothing waits, the step's latest report.
func (r *Reporter) stall(since time.Time) Stall {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, found := activeWait{}, false
	for _, x := range r.waits {
		if !found || x.seq > w.seq {
			w, found = x, true
		}
	}
	if !found {
		w = r.last
	}
	return Stall{Step: r.step, Node: w.node, WaitingFor: w.what, LastError: w.lastErr, Hint: w.hint, Since: since}
}

// notify hands the deadline watcher a token, unless one is waiting.
func (r *Reporter) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// finish marks the step fully done.
func (r *Reporter) finish() {
	r.mu.Lock()
	r.fraction = 1
	r.mu.Unlock()
}

// percentLocked is the operation's percentage with this step at its
// current fraction.
func (r *Reporter) percentLocked() int {
	return int(100 * (float64(r.index-1) + r.fraction) / float64(r.total))
}

func (r *Reporter) log(level, node, msg string) {
	r.sink.Log(Line{Time: r.clock().UTC(), Level: level, Step: r.step, Node: node, Message: msg})
}
