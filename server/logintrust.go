package server

import (
	"container/list"
	"time"
)

// trustTable remembers the client addresses that logged in successfully
// as a user, each for a while after its last success (LoginLimits.TrustFor),
// so that the per-user bucket, which attackers elsewhere can keep empty,
// does not lock that user out from where they usually log in. It holds at
// most max pairs: the pair whose last success is oldest goes first. Keys
// are short however long the names a client sends: an address (see
// clientKey) and a user key (see userKey). Not safe for concurrent use:
// loginThrottle's mutex guards it.
type trustTable struct {
	ttl   time.Duration
	max   int
	order *list.List // of *trustEntry, the most recent success first
	byKey map[string]*list.Element
}

// trustEntry is one (address, user) pair and the time of its last success.
type trustEntry struct {
	key string
	at  time.Time
}

func newTrustTable(ttl time.Duration, max int) *trustTable {
	return &trustTable{ttl: ttl, max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// trustKey joins an address and a user key; NUL appears in neither.
func trustKey(addr, user string) string { return addr + "\x00" + user }

// remember records a successful login as user from addr at now.
func (t *trustTable) remember(addr, user string, now time.Time) {
	key := trustKey(addr, user)
	if el, ok := t.byKey[key]; ok {
		el.Value.(*trustEntry).at = now
		t.order.MoveToFront(el)
		return
	}
	t.byKey[key] = t.order.PushFront(&trustEntry{key: key, at: now})
	for t.order.Len() > t.max {
		t.drop(t.order.Back())
	}
}

// trusted reports whether addr logged in as user within ttl before now;
// a pair past its time is forgotten.
func (t *trustTable) trusted(addr, user string, now time.Time) bool {
	el, ok := t.byKey[trustKey(addr, user)]
	if !ok {
		return false
	}
	if now.Sub(el.Value.(*trustEntry).at) >= t.ttl {
		t.drop(el)
		return false
	}
	return true
}

func (t *trustTable) drop(el *list.Element) {
	delete(t.byKey, el.Value.(*trustEntry).key)
	t.order.Remove(el)
}
