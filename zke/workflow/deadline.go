package workflow

import (
	"context"
	"time"
)

// DefaultStallRepeat is the least time between two Stalled reports of one
// step: a wait whose last error changes on every poll (each second) would
// otherwise flood the operation's log and events.
const DefaultStallRepeat = 5 * time.Second

// watchDeadline reports r's step stalled once deadline has passed since
// start (a time of the workflow's clock; the report's Since is
// start+deadline), and again, at most every repeat, whenever what the
// step waits for changes. The returned stop ends the watch and returns
// once its goroutine has ended; the watch also ends with ctx. A deadline
// of 0 or less watches nothing.
func watchDeadline(ctx context.Context, r *Reporter, deadline, repeat time.Duration, start time.Time) (stop func()) {
	if deadline <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	since := start.Add(deadline)
	go func() {
		defer close(ended)
		t := time.NewTimer(deadline)
		defer t.Stop()
		wait := func(c <-chan time.Time, changed <-chan struct{}) bool {
			select {
			case <-done:
				return false
			case <-ctx.Done():
				return false
			case <-c:
			case <-changed:
			}
			return true
		}
		if !wait(t.C, nil) {
			return
		}
		var last Stall
		sent := false
		for {
			s := r.stall(since)
			if sent && s == last {
				if !wait(nil, r.changed) {
					return
				}
				continue
			}
			r.sink.Stalled(s)
			last, sent = s, true
			t.Reset(repeat)
			if !wait(t.C, nil) {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}
