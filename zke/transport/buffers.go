package transport

// headBuffer keeps the first max bytes written to it and counts the rest;
// Write never fails, so a remote command is never blocked on its output.
// One goroutine writes; it is read after the writer has finished.
type headBuffer struct {
	buf     []byte
	max     int
	dropped int64
}

// Write keeps what fits and counts the rest; it always succeeds.
func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - len(b.buf); room > 0 {
		n := min(room, len(p))
		b.buf = append(b.buf, p[:n]...)
		b.dropped += int64(len(p) - n)
	} else {
		b.dropped += int64(len(p))
	}
	return len(p), nil
}

// bytes returns what was kept.
func (b *headBuffer) bytes() []byte { return b.buf }

// truncated reports whether anything was dropped.
func (b *headBuffer) truncated() bool { return b.dropped > 0 }

// tailBuffer keeps the last max bytes written to it (the end of a
// command's stderr says why it failed). It grows to at most 2×max before
// compacting, so that many small writes stay cheap.
type tailBuffer struct {
	buf     []byte
	max     int
	dropped int64
}

// Write appends p, dropping the oldest bytes beyond the cap; it always
// succeeds.
func (b *tailBuffer) Write(p []byte) (int, error) {
	if len(p) >= b.max {
		b.dropped += int64(len(b.buf) + len(p) - b.max)
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.max {
		cut := len(b.buf) - b.max
		b.dropped += int64(cut)
		b.buf = append(b.buf[:0], b.buf[cut:]...)
	}
	return len(p), nil
}

// bytes returns the last max bytes written.
func (b *tailBuffer) bytes() []byte {
	if len(b.buf) > b.max {
		return b.buf[len(b.buf)-b.max:]
	}
	return b.buf
}

// truncated reports whether anything was dropped.
func (b *tailBuffer) truncated() bool { return b.dropped > 0 || len(b.buf) > b.max }
