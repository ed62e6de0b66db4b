package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// errHijacked tells the handler adapter that the handler took over the
// connection (a websocket): nothing more may be written to w.
var errHijacked = errors.New("connection hijacked")

// Alarms runs funcs at given times: each stream ends by one at its
// token's expiry. Options.Alarms lets tests step a fake instead of
// waiting 24 hours.
type Alarms interface {
	// At runs f in a goroutine of its own once t has come (at once if it
	// has), unless stop is called first; stop reports whether it was.
	At(t time.Time, f func()) (stop func() bool)
}

// systemAlarms are Alarms on the system clock.
type systemAlarms struct{}

func (systemAlarms) At(t time.Time, f func()) func() bool {
	return time.AfterFunc(time.Until(t), f).Stop
}

// streamEnd is why the server ends a stream: the code and reason of the
// close frame its client gets. A stream's context is cancelled with one
// as its cause (context.Cause), and wsStream.end sends it.
type streamEnd struct {
	code   int
	reason string
}

func (e *streamEnd) Error() string { return e.reason }

// The reasons the server ends a stream. A revoked or expired token is a
// policy violation (1008): the client must log in again, not reconnect
// with the same token.
var (
	endShutdown        = &streamEnd{websocket.CloseGoingAway, "server shutting down"}
	endPasswordChanged = &streamEnd{websocket.ClosePolicyViolation, "token revoked: the password changed; log in again"}
	endUserDeleted     = &streamEnd{websocket.ClosePolicyViolation, "token revoked: the user was deleted"}
	endTokenExpired    = &streamEnd{websocket.ClosePolicyViolation, "token expired: log in again"}
)

// streams is the one registry of open websocket streams. It bounds them
// per user, per client address and in all (StreamLimits); it ends a
// user's streams when the user's tokens are revoked (endUser); and Close
// ends every one and waits for their handlers, which http.Server's
// Shutdown does not wait for. It is safe for concurrent use.
type streams struct {
	limits StreamLimits
	alarms Alarms
	wg     sync.WaitGroup // one per admitted stream

	mu     sync.Mutex
	closed bool
	total  int
	users  map[string]map[*streamEntry]struct{}
	addrs  map[string]int
}

// streamEntry is one admitted stream: whose, from where, and the cancel
// of its context.
type streamEntry struct {
	user, addr string
	cancel     context.CancelCauseFunc
	// stamp is the stream's token's stamp (revalidate), known from
	// admission on: a stream is never registered without it, so that a
	// revalidation running while it is admitted cannot pass it over.
	stamp string
}

// newStreams returns an empty registry; limits must be filled.
func newStreams(limits StreamLimits, alarms Alarms) *streams {
	return &streams{limits: limits, alarms: alarms, users: map[string]map[*streamEntry]struct{}{}, addrs: map[string]int{}}
}

// admit registers a stream of user, whose token carries stamp, from addr,
// which cancel ends, or
// refuses it: with a *streamLimitError once one of the bounds is reached,
// with a 503 after Close. The caller must release an admitted stream.
func (st *streams) admit(user, stamp, addr string, cancel context.CancelCauseFunc) (*streamEntry, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, &APIError{Status: http.StatusServiceUnavailable, Code: CodeServerError, Message: "the server is shutting down: reconnect once it is back"}
	}
	if err := st.roomLocked(user, addr); err != nil {
		return nil, err
	}
	e := &streamEntry{user: user, addr: addr, cancel: cancel, stamp: stamp}
	if st.users[user] == nil {
		st.users[user] = map[*streamEntry]struct{}{}
	}
	st.users[user][e] = struct{}{}
	st.addrs[addr]++
	st.total++
	st.wg.Add(1)
	return e, nil
}

// release removes an admitted stream; its handler has returned.
func (st *streams) release(e *streamEntry) {
	st.mu.Lock()
	delete(st.users[e.user], e)
	if len(st.users[e.user]) == 0 {
		delete(st.users, e.user)
	}
	if st.addrs[e.addr]--; st.addrs[e.addr] == 0 {
		delete(st.addrs, e.addr)
	}
	st.total--
	st.mu.Unlock()
	st.wg.Done()
}

// endUser ends every open stream of user: each handler closes its
// websocket with why's code and reason, at once. It does not wait.
func (st *streams) endUser(user string, why *streamEnd) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for e := range st.users[user] {
		e.cancel(why)
	}
}

// room tells, without registering anything, whether a stream of user
// from addr would be admitted now: a handler asks before it does the
// costly part (reading a whole log) that a refused stream should not
// cost. admit still decides.
func (st *streams) room(user, addr string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.roomLocked(user, addr)
}

// roomLocked is room with st.mu held: the bound a new stream of user from
// addr would pass, as a *streamLimitError.
func (st *streams) roomLocked(user, addr string) error {
	switch {
	case len(st.users[user]) >= st.limits.PerUser:
		return &streamLimitError{bound: boundUser, who: user, open: len(st.users[user])}
	case st.addrs[addr] >= st.limits.PerAddress:
		return &streamLimitError{bound: boundAddress, who: addr, open: st.addrs[addr]}
	case st.total >= st.limits.Total:
		return &streamLimitError{bound: boundTotal, open: st.total}
	}
	return nil
}

// streamRoom answers a 429 (as openStream would) when r's stream would be
// refused: see streams.room.
func (s *Server) streamRoom(w http.ResponseWriter, r *http.Request) error {
	user, _ := userFrom(r.Context())
	if err := s.streams.room(user, clientKey(s.clientAddr(r))); err != nil {
		return refuseStream(w, err)
	}
	return nil
}

// revalidate ends the open streams whose user no longer exists, or whose
// token's stamp is no longer the user's (its password changed), as stamp
// says (found false: no such user; an error leaves the user's streams
// open: a read that failed proves nothing). A replica that does not serve the
// password change or the delete itself learns of them through its copy of
// the store, and calls it when the copy changes. stamp is called without
// the registry's lock held.
func (st *streams) revalidate(stamp func(user string) (current string, found bool, err error)) {
	st.mu.Lock()
	open := make(map[string][]*streamEntry, len(st.users))
	for user, entries := range st.users {
		for e := range entries {
			open[user] = append(open[user], e)
		}
	}
	st.mu.Unlock()
	for user, entries := range open {
		current, ok, err := stamp(user)
		if err != nil {
			continue
		}
		for _, e := range entries {
			switch {
			case !ok:
				e.cancel(endUserDeleted)
			case e.stamp != current:
				e.cancel(endPasswordChanged)
			}
		}
	}
}

// newUpgrader accepts websocket upgrades from any origin: every stream
// requires a valid token, which a cross-site page cannot read.
func newUpgrader() websocket.Upgrader {
	return websocket.Upgrader{
		ReadBufferSize:  1024,
		WriteBufferSize: 4096,
		CheckOrigin:     func(*http.Request) bool { return true },
	}
}

// openStream admits r as a stream of its user from its client address
// (clientAddr), upgrades it and returns it with done, which the handler
// must call when it returns. Beyond a bound it writes nothing and returns
// a 429 (Retry-After set on w) for the handler to return: the refusal
// comes before the upgrade. If the upgrade fails the upgrader has
// answered, and the error is errHijacked. The stream's context ends with
// the request, at Close, when the user's tokens are revoked (endUser) and
// at the token's expiry, with the streamEnd wsStream.end sends. The stream
// is counted in Metrics, by the kind its route names, while it is open.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) (*wsStream, func(), error) {
	// The stamp of the token authenticate checked: the stream is
	// registered with it, so a revalidation (a follower's, as its copy of
	// the store learns of a password change) never finds it unchecked.
	authed, _ := r.Context().Value(principalKey{}).(principal)
	ctx, cancel := context.WithCancelCause(r.Context())
	e, err := s.streams.admit(authed.name, authed.stamp, clientKey(s.clientAddr(r)), cancel)
	if err != nil {
		cancel(nil)
		return nil, nil, refuseStream(w, err)
	}
	release := func() {
		cancel(nil)
		s.streams.release(e)
	}
	// A password change or a delete that ran between authenticate and
	// admit found no stream of this one's to end; the token, checked
	// again now that the stream is registered, shows it.
	p, err := s.principal(r)
	if err != nil {
		release()
		return nil, nil, err
	}
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		release()
		return nil, nil, errHijacked // the upgrader has answered
	}
	stopAlarm := s.streams.alarms.At(p.expires, func() { cancel(endTokenExpired) })
	kind := streamKind(routeFrom(r.Context()))
	s.metrics.StreamOpened(kind)
	return newWSStream(ctx, conn), func() {
		stopAlarm()
		s.metrics.StreamClosed(kind)
		release()
	}, nil
}

// Close ends every open stream and waits for their handlers to return;
// a stream opened after it is refused. Call it after
// http.Server.Shutdown.
func (s *Server) Close() {
	st := s.streams
	st.mu.Lock()
	st.closed = true
	for _, open := range st.users {
		for e := range open {
			e.cancel(endShutdown)
		}
	}
	st.mu.Unlock()
	st.wg.Wait()
}
