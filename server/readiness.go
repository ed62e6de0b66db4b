package server

import (
	"context"
	"errors"
	"sync"
	"time"
)

// readyCheckTimeout bounds the whole of /readyz's checks, so that a stuck
// store makes /readyz answer "not ready" within it instead of hanging the
// prober (whose own timeout, often 1–3 s, would read as "down").
const readyCheckTimeout = 2 * time.Second

// errCheckTimeout is a check that did not answer within readyCheckTimeout.
var errCheckTimeout = errors.New("did not answer within " + readyCheckTimeout.String())

// readiness runs the readiness checks side by side under one deadline.
// A check may ignore its context (a store call bounded only by its own
// request timeout): /readyz then answers at the deadline and the check
// goes on alone. At most one run of each check is in flight: a probe that
// arrives while the last run still waits joins it, so probes against a
// stuck store never pile up goroutines.
type readiness struct {
	checks []ReadinessCheck
	mu     sync.Mutex
	// running holds the run in flight of each check, by its index.
	running map[int]*checkRun
}

// checkRun is one run of a check; err is set before done is closed.
type checkRun struct {
	done chan struct{}
	err  error
}

// newReadiness returns the runner of checks, none in flight.
func newReadiness(checks []ReadinessCheck) *readiness {
	return &readiness{checks: checks, running: map[int]*checkRun{}}
}

// run returns each check's result, in the order of the checks, within
// readyCheckTimeout of the call (or ctx's end, which fails the rest). A
// nil readiness has no checks.
func (rd *readiness) run(ctx context.Context) []error {
	if rd == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
	defer cancel()
	runs := make([]*checkRun, len(rd.checks))
	for i := range rd.checks {
		runs[i] = rd.start(i)
	}
	errs := make([]error, len(runs))
	for i, r := range runs {
		// A run that has ended counts even after the deadline: a select
		// on both would pick at random between them.
		select {
		case <-r.done:
			errs[i] = r.err
			continue
		default:
		}
		select {
		case <-r.done:
			errs[i] = r.err
		case <-ctx.Done():
			errs[i] = errCheckTimeout
		}
	}
	return errs
}

// start returns check i's run in flight, or starts one. The run's own
// context has the same bound as a call, detached from the request that
// started it so that a caller going away does not fail the run another
// caller joined.
func (rd *readiness) start(i int) *checkRun {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if r := rd.running[i]; r != nil {
		return r
	}
	r := &checkRun{done: make(chan struct{})}
	rd.running[i] = r
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), readyCheckTimeout)
		defer cancel()
		err := rd.checks[i].Check(ctx)
		rd.mu.Lock()
		delete(rd.running, i)
		rd.mu.Unlock()
		r.err = err
		close(r.done)
	}()
	return r
}
