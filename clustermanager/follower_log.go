package clustermanager

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

// FollowLog returns the cluster's current or last operation log from the
// stored frames, as Manager.FollowLog does: the frames after since, and,
// while the stored last operation runs, a channel of the frames stored
// after them (closed after the result frame, when the operation is no
// longer running, or when the reader falls subscriberBuffer frames
// behind) and a func to stop following. The leader stores frames in
// batches (oplogFlushInterval), so they reach a follower that much later.
func (f *Follower) FollowLog(name string, since uint64) ([]Frame, <-chan Frame, func(), error) {
	if f.opts.Changed == nil {
		return nil, nil, nil, fmt.Errorf("follow the log of %s: this follower is not told of changes", name)
	}
	changed := f.opts.Changed()
	c, err := f.Get(name)
	if err != nil {
		return nil, nil, nil, err
	}
	frames, err := f.frames(name, since)
	if err != nil {
		return nil, nil, nil, err
	}
	if !c.LastOperation.running() || ended(frames) {
		return frames, nil, func() {}, nil
	}
	last := since
	if len(frames) > 0 {
		last = frames[len(frames)-1].Seq
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan Frame, subscriberBuffer)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		// grace runs once the operation is seen ended: the leader saves
		// the end before it flushes the last frames.
		var grace <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-grace:
				return // no result frame came: the reader reads again
			case <-changed:
			}
			changed = f.opts.Changed()
			more, replaced, err := f.framesAfter(name, last)
			if err != nil || replaced {
				return // the reader reads again, and gets the next operation's log
			}
			for _, fr := range more {
				select {
				case ch <- fr:
				default:
					return // fell behind: the reader reconnects with ?since=
				}
				last = fr.Seq
			}
			if ended(more) {
				return
			}
			if c, err := f.Get(name); err != nil || !c.LastOperation.running() {
				if grace == nil {
					t := time.NewTimer(resultGrace)
					defer t.Stop()
					grace = t.C
				}
			}
		}
	}()
	return frames, ch, func() {
		cancel()
		<-done
	}, nil
}

// resultGrace is how long a follower waits for the result frame after it
// saw the operation end: the leader flushes frames every
// oplogFlushInterval, after it saved the end.
const resultGrace = 10 * oplogFlushInterval

// frames reads the stored frames of name's log after seq since; a since
// past the last stored frame (the client followed an earlier operation)
// reads from the start.
func (f *Follower) frames(name string, since uint64) ([]Frame, error) {
	rows, err := f.opts.Store.Rows(storage.BucketOperationLogs, name+"/")
	if err != nil {
		return nil, fmt.Errorf("read the operation log of %s: %w", name, err)
	}
	all := make([]Frame, 0, len(rows))
	for _, r := range rows {
		var fr Frame
		if json.Unmarshal(r.Value, &fr) == nil {
			all = append(all, fr)
		}
	}
	if len(all) > 0 && since > all[len(all)-1].Seq {
		since = 0
	}
	out := all[:0]
	for _, fr := range all {
		if fr.Seq > since {
			out = append(out, fr)
		}
	}
	return out, nil
}

// framesAfter reads the stored frames of name's log after frame last,
// reading only the rows from it on; replaced reports frames stored after
// last while last itself is gone (the next operation's log replaced this
// one).
func (f *Follower) framesAfter(name string, last uint64) (frames []Frame, replaced bool, err error) {
	from := oplogKey(name, last)
	rows, err := f.opts.Store.RowsFrom(storage.BucketOperationLogs, name+"/", from)
	if err != nil {
		return nil, false, fmt.Errorf("read the operation log of %s: %w", name, err)
	}
	if last > 0 && len(rows) > 0 {
		if rows[0].Key != from {
			return nil, true, nil // newer frames, but not after ours
		}
		rows = rows[1:]
	}
	for _, r := range rows {
		var fr Frame
		if json.Unmarshal(r.Value, &fr) == nil && fr.Seq > last {
			frames = append(frames, fr)
		}
	}
	return frames, false, nil
}

// ended reports whether frames end with the operation's result.
func ended(frames []Frame) bool {
	return len(frames) > 0 && frames[len(frames)-1].Type == FrameResult
}
