package server

import (
	"sync"
	"time"
)

// nonceMemory remembers the nonces of the forwarded-client headers the
// leader accepted, each for ttl from its use, so that each header is
// accepted once (forwardedclient.go). Its memory is bounded: it holds at
// most capacity nonces and refuses a new one beyond that rather than grow,
// so a flood can only make the leader fall back to the follower's address.
// Every nonce is kept for the same ttl, so they expire in the order they
// came: pruning on insert pops them off the front of a queue. It is safe
// for concurrent use.
type nonceMemory struct {
	ttl      time.Duration
	capacity int

	mu   sync.Mutex
	seen map[string]struct{}
	// queue holds the nonces of seen, oldest first.
	queue []nonceEntry
}

type nonceEntry struct {
	nonce   string
	expires time.Time
}

func newNonceMemory(ttl time.Duration, capacity int) *nonceMemory {
	return &nonceMemory{ttl: ttl, capacity: capacity, seen: map[string]struct{}{}}
}

// use records nonce as used at now, after forgetting the nonces expired by
// then. It returns errForwardedReplayed if nonce was used within ttl, and
// errForwardedFull if capacity nonces are remembered.
func (m *nonceMemory) use(nonce string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.queue) > 0 && !now.Before(m.queue[0].expires) {
		delete(m.seen, m.queue[0].nonce)
		m.queue[0] = nonceEntry{} // let the string go
		m.queue = m.queue[1:]
	}
	if _, ok := m.seen[nonce]; ok {
		return errForwardedReplayed
	}
	if len(m.seen) >= m.capacity {
		return errForwardedFull
	}
	m.seen[nonce] = struct{}{}
	m.queue = append(m.queue, nonceEntry{nonce: nonce, expires: now.Add(m.ttl)})
	return nil
}
