package server

import (
	"sync/atomic"
	"time"
)

// logSample lets a warning that may come with every request through at
// most once per interval, with how many occurred since the last one that
// went through: a flood (an etcd hiccup, a replayed header) costs one log
// line per interval instead of one per request. It is safe for concurrent
// use; the zero value is ready.
type logSample struct {
	n    atomic.Int64
	last atomic.Int64 // unix nanoseconds of the last logged occurrence
}

// note counts one occurrence at now and reports whether to log it, with
// the occurrences since the last logged one (this one included).
func (l *logSample) note(now time.Time, every time.Duration) (int64, bool) {
	n := l.n.Add(1)
	last := l.last.Load()
	if now.UnixNano()-last < int64(every) || !l.last.CompareAndSwap(last, now.UnixNano()) {
		return 0, false
	}
	l.n.Add(-n)
	return n, true
}
