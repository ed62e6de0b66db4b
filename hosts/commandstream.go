package hosts

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"
)

// followBuffer bounds the chunks waiting for one follower beyond its
// catch-up: a chunk is one read of the SSH channel (at most 32 KiB), so a
// follower holds about 4 MiB at most. One that lets it fill is cut off,
// so that a slow client never slows the command or the other followers.
const followBuffer = 128

// The output streams of a host, as CommandChunk.Stream names them.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// streamNames maps a stream's index in hostFeed to its name.
var streamNames = [2]string{StreamStdout, StreamStderr}

// droppedMessage explains the marker ending a lagging follower's channel.
const droppedMessage = "this follower fell behind and the output since was dropped: follow the command again " +
	"(its output so far is replayed, up to 64 KiB per stream) or GET its record once it has finished"

// CommandChunk is one step of a running command as its followers see it:
// a piece of one host's output (Stream, Data, Offset), the end of one host
// (Done, with ExitCode and Error as in its CommandResult), or, last on the
// channel of a follower that fell behind, Dropped (Error says what to do).
type CommandChunk struct {
	Host   string
	Stream string
	// Data is cut at character boundaries, so that each chunk is valid
	// UTF-8 on its own when the output is.
	Data string
	// Offset is the position of Data's first byte in the host's stream: a
	// gap between two chunks is output dropped by the 64 KiB cap of what
	// is kept for a follower that joined late.
	Offset   int64
	Done     bool
	ExitCode int
	Error    string
	Dropped  bool
}

// commandFeed is the live side of one running command: while its hosts run
// it, each piece of their output is kept (capped as the record keeps it)
// and handed to the followers. Every change happens under mu and never
// waits for a follower.
type commandFeed struct {
	mu    sync.Mutex
	order []string
	hosts map[string]*hostFeed
	// followers are the open channels handed out by follow: every close
	// removes its channel, so a channel here is open.
	followers map[chan CommandChunk]struct{}
	closed    bool
}

// hostFeed is one host's output so far: stdout keeps its first 64 KiB,
// stderr its last, as the transport keeps them for the record.
type hostFeed struct {
	out [2]keptOutput
	// carry holds an incomplete UTF-8 sequence ending a write until the
	// next one completes it.
	carry [2][]byte
	done  *CommandChunk
}

func newCommandFeed(hosts []string) *commandFeed {
	f := &commandFeed{order: hosts, hosts: make(map[string]*hostFeed, len(hosts)), followers: map[chan CommandChunk]struct{}{}}
	for _, h := range hosts {
		f.hosts[h] = &hostFeed{out: [2]keptOutput{{}, {tail: true}}}
	}
	return f
}

// feedWriter is one host's stdout (stream 0) or stderr (stream 1), for
// the executor. It never fails and never blocks on a follower.
type feedWriter struct {
	f      *commandFeed
	host   string
	stream int
}

func (w feedWriter) Write(p []byte) (int, error) {
	w.f.output(w.host, w.stream, p)
	return len(p), nil
}

// output publishes p, a piece of host's stream, holding back an
// incomplete UTF-8 sequence at its end. Output after the host finished
// (a late write of a killed command) is dropped.
func (f *commandFeed) output(host string, stream int, p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hosts[host]
	if h == nil || h.done != nil || len(p) == 0 {
		return
	}
	data := make([]byte, 0, len(h.carry[stream])+len(p))
	data = append(append(data, h.carry[stream]...), p...)
	n := completeUTF8(data)
	h.carry[stream] = append(h.carry[stream][:0], data[n:]...)
	f.publishLocked(host, h, stream, data[:n])
}

// publishLocked keeps data and hands it to the followers.
func (f *commandFeed) publishLocked(host string, h *hostFeed, stream int, data []byte) {
	if len(data) == 0 {
		return
	}
	offset := h.out[stream].total
	h.out[stream].write(data)
	f.sendLocked(CommandChunk{Host: host, Stream: streamNames[stream], Data: string(data), Offset: offset})
}

// finish ends host's output: what an incomplete UTF-8 sequence held back,
// then its done marker. Output after it is dropped.
func (f *commandFeed) finish(host string, exitCode int, errText string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hosts[host]
	if h.done != nil {
		return
	}
	for s := range h.carry {
		f.publishLocked(host, h, s, h.carry[s])
		h.carry[s] = nil
	}
	h.done = &CommandChunk{Host: host, Done: true, ExitCode: exitCode, Error: errText}
	f.sendLocked(*h.done)
}

// sendLocked hands c to every follower. One whose buffer is full gets the
// dropped marker (its last free slot is kept for it) and is closed.
func (f *commandFeed) sendLocked(c CommandChunk) {
	for ch := range f.followers {
		if len(ch) < cap(ch)-1 {
			ch <- c
			continue
		}
		ch <- CommandChunk{Dropped: true, Error: droppedMessage}
		close(ch)
		delete(f.followers, ch)
	}
}

// follow returns a channel that starts with the output kept so far of
// each host (at most one chunk per stream) and the done markers of those
// that finished, then carries what comes, and is closed when the command
// has finished; stop closes it early and forgets it. ok is false once the
// command has finished.
func (f *commandFeed) follow() (ch <-chan CommandChunk, stop func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, func() {}, false
	}
	var catchUp []CommandChunk
	for _, name := range f.order {
		h := f.hosts[name]
		for s := range h.out {
			if data, offset := h.out[s].kept(); len(data) > 0 {
				catchUp = append(catchUp, CommandChunk{Host: name, Stream: streamNames[s], Data: string(data), Offset: offset})
			}
		}
		if h.done != nil {
			catchUp = append(catchUp, *h.done)
		}
	}
	fl := make(chan CommandChunk, len(catchUp)+followBuffer)
	for _, c := range catchUp {
		fl <- c
	}
	f.followers[fl] = struct{}{}
	return fl, func() { f.unfollow(fl) }, true
}

// unfollow closes fl and forgets it unless that is done; it may be called
// more than once, and after the feed closed.
func (f *commandFeed) unfollow(fl chan CommandChunk) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, open := f.followers[fl]; open {
		close(fl)
		delete(f.followers, fl)
	}
}

// close closes every follower's channel: the command has finished and its
// record is stored.
func (f *commandFeed) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for fl := range f.followers {
		close(fl)
	}
	clear(f.followers)
}

// feedRegistry holds a manager's running commands' feeds by command id
// (Manager.feeds): a feed lives from RunCommand until its record is stored
// finished, so the registry is empty when nothing runs.
type feedRegistry struct {
	mu   sync.Mutex
	byID map[string]*commandFeed
}

func newFeedRegistry() feedRegistry { return feedRegistry{byID: map[string]*commandFeed{}} }

// setFeed keeps f as command id's feed, or forgets the feed when f is nil.
func (m *Manager) setFeed(id string, f *commandFeed) {
	m.feeds.mu.Lock()
	defer m.feeds.mu.Unlock()
	if f == nil {
		delete(m.feeds.byID, id)
		return
	}
	m.feeds.byID[id] = f
}

// feed returns command id's feed, nil unless it runs.
func (m *Manager) feed(id string) *commandFeed {
	m.feeds.mu.Lock()
	defer m.feeds.mu.Unlock()
	return m.feeds.byID[id]
}

// FollowCommand returns command id's record as stored (Running, without
// results, while it runs) and a channel of its progress: each host's
// output so far, then its output as it comes and one Done chunk per host
// as it finishes, the channel closed once the finished record is stored
// (GET it with Command). For a finished command the channel is already
// closed. A follower that falls behind gets a Dropped chunk and its
// channel is closed; the command goes on. stop frees the follower; call it
// when done, whatever happened.
func (m *Manager) FollowCommand(id string) (CommandRecord, <-chan CommandChunk, func(), error) {
	var ch <-chan CommandChunk
	stop, ok := func() {}, false
	if f := m.feed(id); f != nil {
		ch, stop, ok = f.follow()
	}
	rec, err := m.Command(id)
	if err != nil {
		stop()
		if !errors.Is(err, ErrCommandNotFound) {
			err = fmt.Errorf("follow command %s: %w", id, err)
		}
		return CommandRecord{}, nil, nil, err
	}
	if !ok {
		closed := make(chan CommandChunk)
		close(closed)
		ch, stop = closed, func() {}
	}
	return rec, ch, stop, nil
}

// keptOutput is what is kept of one output stream for the followers that
// join late: its first maxOutputBytes (stdout: how the command started)
// or, with tail, its last (stderr: why it failed), as the transport keeps
// them for the record, and how many bytes went through.
type keptOutput struct {
	buf   []byte
	tail  bool
	total int64
}

// write keeps what the cap allows of p. The tail grows to twice the cap
// before it is compacted, so that many small writes stay cheap.
func (k *keptOutput) write(p []byte) {
	k.total += int64(len(p))
	if !k.tail {
		if room := maxOutputBytes - len(k.buf); room > 0 {
			k.buf = append(k.buf, p[:min(room, len(p))]...)
		}
		return
	}
	k.buf = append(k.buf, p...)
	if len(k.buf) > 2*maxOutputBytes {
		k.buf = append(k.buf[:0], k.buf[len(k.buf)-maxOutputBytes:]...)
	}
}

// kept returns what is kept and the offset of its first byte in the
// stream.
func (k *keptOutput) kept() ([]byte, int64) {
	if !k.tail {
		return k.buf, 0
	}
	b := k.buf
	if len(b) > maxOutputBytes {
		b = b[len(b)-maxOutputBytes:]
	}
	return b, k.total - int64(len(b))
}

// completeUTF8 returns the length of b without an incomplete UTF-8
// sequence at its end. Bytes that are not UTF-8 count as complete, so
// binary output is never held back.
func completeUTF8(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}
