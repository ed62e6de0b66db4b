package testbed

import (
	"context"
	"errors"
	"time"
)

// pollInterval is how often readiness checks are repeated: short, because
// every check is a cheap local dial or request and start time matters.
const pollInterval = 50 * time.Millisecond

// poll calls check until it returns nil or an error wrapping ErrExited (a
// dead process will not become ready), or until ctx ends, whose error it
// then returns joined with the last failure.
func poll(ctx context.Context, check func(ctx context.Context) error) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-timer.C:
		}
		last = check(ctx)
		if last == nil || errors.Is(last, ErrExited) {
			return last
		}
		timer.Reset(pollInterval)
	}
}
