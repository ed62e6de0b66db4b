package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// getOK is one readiness probe: GET url answers 200. Otherwise the error
// carries the status and the start of the body, which says what is not
// ready yet.
func getOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}
