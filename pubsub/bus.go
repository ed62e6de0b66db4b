package pubsub

import (
	"sync"
	"time"

	cskr "github.com/cskr/pubsub/v2"
)

// DefaultBuffer is the per-subscriber channel capacity when Options.Buffer
// is not set: room for a burst of lifecycle events (a reload of hundreds of
// clusters) while a websocket writer catches up.
const DefaultBuffer = 256

// lifecycleTopic is the one topic every lifecycle event goes to.
const lifecycleTopic = "lifecycle"

// Options tunes New. The zero value is ready to use.
type Options struct {
	// Buffer is each subscriber's channel capacity; zero or less means
	// DefaultBuffer. Events published while a subscriber's buffer is full
	// are dropped for that subscriber only.
	Buffer int
}

// Bus fans lifecycle events out to every subscriber. It runs one goroutine
// (cskr/pubsub's dispatcher), started by New and stopped by Close; the
// owner must call Close. A Bus is safe for concurrent use.
type Bus struct {
	ps *cskr.PubSub[string, Event]

	// mu is held for reading around every call into ps and for writing
	// by Close: a call into ps after its Shutdown would block forever.
	mu     sync.RWMutex
	closed bool
}

// Subscription receives the events published after Subscribe returned.
type Subscription struct {
	bus  *Bus
	ch   chan Event
	once sync.Once
}

// New returns a running Bus. Close it to stop its goroutine.
func New(opts Options) *Bus {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultBuffer
	}
	return &Bus{ps: cskr.New[string, Event](opts.Buffer)}
}

// Publish sends e to every current subscriber that has room in its buffer
// and drops it for the others. It never waits for a subscriber: it only
// hands e to the dispatcher, which never blocks. A zero e.Time is set to
// now. Publishing on a closed Bus does nothing.
func (b *Bus) Publish(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return
	}
	b.ps.TryPub(e, lifecycleTopic)
}

// Subscribe starts a subscription. The caller must receive from C and
// call Close when done. On a closed Bus the subscription's C is already
// closed.
func (b *Bus) Subscribe() *Subscription {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		ch := make(chan Event)
		close(ch)
		return &Subscription{bus: b, ch: ch}
	}
	return &Subscription{bus: b, ch: b.ps.Sub(lifecycleTopic)}
}

// Close stops the dispatcher; it then closes every subscription's channel
// (after the events already buffered in it). Later Publish calls do
// nothing. Close is idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	b.ps.Shutdown()
}

// C is the channel events arrive on, in publication order. It is closed
// after the subscription or its Bus is closed, once the events buffered
// before that have been received.
func (s *Subscription) C() <-chan Event { return s.ch }

// Close ends the subscription: no event published after Close returns is
// delivered, and C is closed soon after. It is idempotent, safe to call
// concurrently with Publish and from the goroutine reading C, and needs no
// draining of C.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.bus.mu.RLock()
		defer s.bus.mu.RUnlock()
		if s.bus.closed {
			return // Bus.Close closes every channel
		}
		s.bus.ps.Unsub(s.ch)
	})
}
