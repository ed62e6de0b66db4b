package clustermanager

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Frame types of an operation log.
const (
	FrameLog      = "log"
	FrameProgress = "progress"
	FrameResult   = "result"
	// FrameStalled says that the running step passed its deadline: what
	// it waits for, on which node, its last error.
	FrameStalled = "stalled"
)

// oplogFlushInterval bounds how long a log line may sit in memory before
// it is written: a crash loses at most this much of a log, and a busy
// install writes a few transactions a second rather than one per line.
const oplogFlushInterval = 250 * time.Millisecond

// subscriberBuffer is how many frames a follower may lag behind before it
// is cut off (it reconnects with ?since= and loses nothing).
const subscriberBuffer = 1024

// Frame is one entry of an operation's log: a line, a progress report, or
// the final result. Seq numbers start at 1 and have no gaps.
type Frame struct {
	Seq     uint64    `json:"seq"`
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`
	Level   string    `json:"level,omitempty"`
	Step    string    `json:"step,omitempty"`
	Node    string    `json:"node,omitempty"`
	Message string    `json:"message,omitempty"`
	Index   int       `json:"index,omitempty"`
	Total   int       `json:"total,omitempty"`
	Percent int       `json:"percent,omitempty"`
	// ETA is the estimated number of seconds left (progress frames
	// that start a step, once earlier operations have been measured).
	ETA *int `json:"eta,omitempty"`
	// Skipped marks the progress frame of a step that a resumed run did
	// not redo: its inputs were unchanged and it was verified in place.
	Skipped bool `json:"skipped,omitempty"`
	// Status is the cluster's state after the operation (result frames).
	Status string `json:"status,omitempty"`
}

// opLog is the durable log of a cluster's current or last operation. Lines
// are kept in storage.BucketOperationLogs under "<cluster>/<seq>", written
// in small batches; followers get every frame live.
type opLog struct {
	store   storage.Store
	cluster string
	clock   func() time.Time

	// flushMu makes a flush (pending → store) atomic for follow, which
	// reads the store and then pending: without it a frame in flight
	// would be in neither.
	flushMu sync.RWMutex

	mu        sync.Mutex
	op        uint64 // the current operation's number; frames of others are dropped
	seq       uint64
	pending   []Frame
	followers map[chan Frame]struct{}
	finished  bool
}

func newOpLog(store storage.Store, cluster string, clock func() time.Time) *opLog {
	// Finished until an operation begins: a follower of a cluster whose
	// log nothing will extend (an imported cluster, an operation a crash
	// ended) gets the frames and no channel.
	return &opLog{store: store, cluster: cluster, clock: clock, followers: map[chan Frame]struct{}{}, finished: true}
}

func oplogKey(cluster string, seq uint64) string { return fmt.Sprintf("%s/%016x", cluster, seq) }

// begin starts an operation's log: a fresh operation removes the previous
// operation's log; a resumed one (retry, restart) appends to it. It is
// called before the operation's goroutine starts, so that a follower who
// comes right after sees the operation as running.
// It returns the operation's number, which every frame of the operation
// carries to append: a late frame of an earlier operation is dropped.
func (l *opLog) begin(fresh bool) (uint64, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.op++
	l.finished = false
	if !fresh {
		return l.op, nil
	}
	l.seq, l.pending = 0, nil
	if err := l.store.Update(func(tx storage.Tx) error {
		return tx.DeletePrefix(storage.BucketOperationLogs, l.cluster+"/")
	}); err != nil {
		return l.op, fmt.Errorf("clear the operation log of %s: %w", l.cluster, err)
	}
	return l.op, nil
}

// current returns the number of the operation being logged.
func (l *opLog) current() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.op
}

// restore continues numbering after what the store holds (after a
// restart), so that a resumed operation appends to its log.
func (l *opLog) restore() error {
	kvs, err := l.store.ListPrefix(storage.BucketOperationLogs, l.cluster+"/")
	if err != nil {
		return fmt.Errorf("read the operation log of %s: %w", l.cluster, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(kvs); n > 0 {
		var f Frame
		if err := json.Unmarshal(kvs[n-1].Value, &f); err == nil {
			l.seq = f.Seq
		}
	}
	return nil
}

// append numbers f, queues it for the store and hands it to followers.
// A frame of an operation other than the current one (op) is dropped.
func (l *opLog) append(op uint64, f Frame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if op != l.op {
		return
	}
	l.seq++
	f.Seq = l.seq
	if f.Time.IsZero() {
		f.Time = l.clock().UTC()
	}
	l.pending = append(l.pending, f)
	for ch := range l.followers {
		select {
		case ch <- f:
		default:
			// Too slow: cut it off; it resumes with ?since=.
			delete(l.followers, ch)
			close(ch)
		}
	}
	if f.Type == FrameResult {
		l.finished = true
		for ch := range l.followers {
			delete(l.followers, ch)
			close(ch)
		}
	}
}

// flush writes the queued frames in one transaction.
func (l *opLog) flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	pending := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := l.store.Update(func(tx storage.Tx) error {
		for _, f := range pending {
			b, err := json.Marshal(f)
			if err != nil {
				return err
			}
			if err := tx.Put(storage.BucketOperationLogs, oplogKey(l.cluster, f.Seq), b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		l.mu.Lock()
		l.pending = append(pending, l.pending...)
		l.mu.Unlock()
		return fmt.Errorf("write the operation log of %s: %w", l.cluster, err)
	}
	return nil
}

// flushWhile flushes the log every oplogFlushInterval until the returned
// func is called, which flushes once more and waits for the flusher to
// stop. An operation calls it for its whole run: defer l.flushWhile()().
func (l *opLog) flushWhile() func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.flushLoop(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// flushLoop flushes every oplogFlushInterval until ctx ends, then once
// more.
func (l *opLog) flushLoop(ctx context.Context) {
	t := time.NewTicker(oplogFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = l.flush()
			return
		case <-t.C:
			_ = l.flush()
		}
	}
}

// follow returns the frames after since and, unless the operation has
// finished, a channel of the frames that follow (closed after the result
// frame, or when the follower falls too far behind) and a func to stop
// following.
func (l *opLog) follow(since uint64) ([]Frame, <-chan Frame, func(), error) {
	l.flushMu.RLock()
	defer l.flushMu.RUnlock()
	kvs, err := l.store.ListPrefix(storage.BucketOperationLogs, l.cluster+"/")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read the operation log of %s: %w", l.cluster, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if since > l.seq {
		since = 0 // the client followed an earlier operation
	}
	var out []Frame
	last := since
	for _, kv := range kvs {
		var f Frame
		if err := json.Unmarshal(kv.Value, &f); err != nil || f.Seq <= last {
			continue
		}
		out = append(out, f)
		last = f.Seq
	}
	for _, f := range l.pending {
		if f.Seq > last {
			out = append(out, f)
			last = f.Seq
		}
	}
	if l.finished {
		return out, nil, func() {}, nil
	}
	ch := make(chan Frame, subscriberBuffer)
	l.followers[ch] = struct{}{}
	stop := func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, ok := l.followers[ch]; ok {
			delete(l.followers, ch)
			close(ch)
		}
	}
	return out, ch, stop, nil
}

// lineFrame converts a workflow log line.
func lineFrame(ln workflow.Line) Frame {
	return Frame{Type: FrameLog, Time: ln.Time, Level: ln.Level, Step: ln.Step, Node: ln.Node, Message: strings.TrimSpace(ln.Message)}
}

// progressFrame converts a workflow progress report.
func progressFrame(p workflow.Progress) Frame {
	return Frame{Type: FrameProgress, Step: p.Step, Node: p.Node, Message: p.Message, Index: p.Index, Total: p.Total, Percent: p.Percent, Skipped: p.Skipped}
}

// FollowLog returns the frames of the cluster's current or last operation
// after seq since and, while that operation runs, a channel of the frames
// that follow and a func to stop following. The channel is nil when
// nothing runs; it is closed after the result frame, or early when the
// follower falls too far behind (it follows again from the last seq it
// saw and loses nothing).
func (m *Manager) FollowLog(name string, since uint64) ([]Frame, <-chan Frame, func(), error) {
	e, err := m.lookup(name)
	if err != nil {
		return nil, nil, nil, err
	}
	log := m.oplogFor(e)
	frames, ch, stop, err := log.follow(since)
	if err != nil {
		return nil, nil, nil, err
	}
	if ch == nil || m.queue.busy(name) {
		return frames, ch, stop, nil
	}
	stop()
	// The worker is idle: whatever the operation wrote is in the store
	// or pending; read once more.
	frames, _, stop, err = log.follow(since)
	if err != nil {
		return nil, nil, nil, err
	}
	stop()
	return frames, nil, func() {}, nil
}
