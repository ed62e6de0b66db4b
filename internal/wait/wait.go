// Package wait holds the one helper every retry loop needs: a pause that
// ends early when its context does, so that no loop outlives its context
// by a whole pause.
package wait

import (
	"context"
	"time"
)

// Sleep waits d unless ctx ends first; it reports whether the whole
// pause passed (false: ctx ended).
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
