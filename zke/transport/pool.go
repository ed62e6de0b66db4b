package transport

import (
	"context"
	"errors"
	"sync"
)

// Pool keeps one client per node, so that the steps of an operation share
// one connection to each node. It is safe for concurrent use; concurrent
// Gets for one node dial once.
type Pool struct {
	dialer *Dialer

	mu      sync.Mutex
	closed  bool
	entries map[string]*poolEntry // by node name
}

// poolEntry is the client of one node, or the dial in progress for it.
type poolEntry struct {
	key   targetKey
	ready chan struct{} // closed when the dial has ended
	// Set before ready is closed:
	client *Client // nil if the dial failed
	err    error
}

// targetKey is what must be equal for a client to serve a Target.
type targetKey struct {
	address, user, hostKey, signer string
	port                           int
}

// keyOf returns t's key; t is normalized.
func keyOf(t Target) targetKey {
	return targetKey{
		address: t.Address, user: t.User, hostKey: t.HostKey, port: t.Port,
		signer: string(t.Signer.PublicKey().Marshal()),
	}
}

// NewPool returns an empty pool whose clients are dialed with opts.
func NewPool(opts Options) (*Pool, error) {
	d, err := NewDialer(opts)
	if err != nil {
		return nil, err
	}
	return &Pool{dialer: d, entries: make(map[string]*poolEntry)}, nil
}

// Get returns the pool's live client for t.Node. It dials when there is
// none, when the previous one died, or when t changed (address, port,
// user, key or pinned host key; the old client is closed). The pool owns
// the client: callers must not Close it. Get blocks at most as long as
// Dial and returns when ctx ends; a caller that waits for another's dial
// gets that dial's error, unless it was that caller's context that ended.
func (p *Pool) Get(ctx context.Context, t Target) (*Client, error) {
	t, err := t.normalized()
	if err != nil {
		return nil, err
	}
	key := keyOf(t)
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		e := p.entries[t.Node]
		if e != nil && !e.dialed() {
			p.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, ctxError(t, "connect", ctx, nil)
			}
			if e.err != nil && !errors.Is(e.err, context.Canceled) && !errors.Is(e.err, context.DeadlineExceeded) {
				return nil, e.err
			}
			continue // look again: the entry is live, replaced or gone
		}
		if e != nil && e.client != nil && e.key == key && e.client.Err() == nil {
			p.mu.Unlock()
			return e.client, nil
		}
		var old *Client
		if e != nil {
			old = e.client
		}
		e = &poolEntry{key: key, ready: make(chan struct{})}
		p.entries[t.Node] = e
		p.mu.Unlock()
		if old != nil {
			old.Close()
		}
		return p.dial(ctx, t, e)
	}
}

// dial fills e by dialing t and publishes the result.
func (p *Pool) dial(ctx context.Context, t Target, e *poolEntry) (*Client, error) {
	c, err := p.dialer.Dial(ctx, t)
	p.mu.Lock()
	closed := p.closed
	if err != nil || closed {
		if p.entries[t.Node] == e {
			delete(p.entries, t.Node)
		}
	}
	if closed && err == nil {
		err = ErrClosed
	}
	if err == nil {
		e.client = c
	}
	e.err = err
	close(e.ready)
	p.mu.Unlock()
	if closed && c != nil {
		c.Close()
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// dialed reports whether the entry's dial has ended. Call with p.mu held.
func (e *poolEntry) dialed() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// Remove closes and forgets the client of node, if any (a node removed
// from the cluster). A dial in progress for it is left to finish.
func (p *Pool) Remove(node string) {
	p.mu.Lock()
	e := p.entries[node]
	if e == nil || !e.dialed() {
		p.mu.Unlock()
		return
	}
	delete(p.entries, node)
	p.mu.Unlock()
	if e.client != nil {
		e.client.Close()
	}
}

// Close closes every client and makes later Gets fail with ErrClosed. A
// dial in progress closes its client when it ends. It is idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var clients []*Client
	for node, e := range p.entries {
		if e.dialed() && e.client != nil {
			clients = append(clients, e.client)
		}
		delete(p.entries, node)
	}
	p.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
	return nil
}
