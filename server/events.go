package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"
)

const (
	// wsWriteTimeout bounds one websocket write: a client that stops
	// reading is dropped rather than holding a goroutine forever.
	wsWriteTimeout = 10 * time.Second
	// wsPingInterval keeps idle connections alive through proxies and
	// detects dead peers.
	wsPingInterval = 30 * time.Second
	// wsPongWait is how long a peer may stay silent (no pong) before the
	// stream is closed.
	wsPongWait = 2 * wsPingInterval
	// wsCloseGrace bounds the wait for the peer's close reply.
	wsCloseGrace = 2 * time.Second
)

func (s *Server) registerEventRoutes(ws *mux.Router) {
	ws.Handle("/events", s.handle(s.streamEvents)).Methods(http.MethodGet)
}

// streamEvents sends every lifecycle event as one JSON text frame until the
// client goes away or the server shuts down. The admin gets every event;
// another user only those of the clusters their projects grant, as they
// stand when the event comes (a grant revoked mid-stream stops the
// cluster's events), so that the console lists live what the user may
// list.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) error {
	watch, err := s.newEventFilter(r)
	if err != nil {
		return err
	}
	sub := s.opts.Bus.Subscribe()
	defer sub.Close()
	stream, done, err := s.openStream(w, r)
	if err != nil {
		return err
	}
	defer done()
	defer stream.end()
	for {
		select {
		case <-stream.ctx.Done():
			return errHijacked
		case ev, ok := <-sub.C():
			if !ok {
				return errHijacked
			}
			if !watch.allows(ev) {
				continue
			}
			if err := stream.writeJSON(ev); err != nil {
				return errHijacked
			}
		case <-stream.ping.C:
			if err := stream.writePing(); err != nil {
				return errHijacked
			}
		}
	}
}

// wsStream is one server-push websocket: a reader goroutine that handles
// pongs and notices the peer leaving, and bounded writes.
type wsStream struct {
	ctx    context.Context
	cancel context.CancelFunc
	conn   *websocket.Conn
	ping   *time.Ticker
	reader chan struct{}
}

func newWSStream(parent context.Context, conn *websocket.Conn) *wsStream {
	ctx, cancel := context.WithCancel(parent)
	st := &wsStream{ctx: ctx, cancel: cancel, conn: conn, ping: time.NewTicker(wsPingInterval), reader: make(chan struct{})}
	// The request's write deadline (Server.writeDeadline) would cut a
	// stream that outlives it, such as a long install's zkelog: from here
	// on every write sets its own deadline, and the read deadline follows
	// the pongs.
	_ = conn.NetConn().SetWriteDeadline(time.Time{})
	conn.SetReadLimit(4096)
	_ = conn.SetReadDeadline(time.Now().Add(wsPongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(wsPongWait)) })
	go func() {
		defer close(st.reader)
		defer cancel()
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	return st
}

func (st *wsStream) writeJSON(v any) error {
	_ = st.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	return st.conn.WriteJSON(v)
}

func (st *wsStream) writeText(line string) error {
	_ = st.conn.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	return st.conn.WriteMessage(websocket.TextMessage, []byte(line))
}

func (st *wsStream) writePing() error {
	return st.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteTimeout))
}

// end closes the stream for the reason its context was cancelled with
// (a streamEnd: the user's tokens revoked, the token expired), or as the
// server shutting down when it ended otherwise.
func (st *wsStream) end() {
	var why *streamEnd
	if !errors.As(context.Cause(st.ctx), &why) {
		why = endShutdown
	}
	st.close(why.code, why.reason)
}

// close says goodbye and waits (bounded) for the peer's close reply
// before closing the connection: closing with the reply unread would make
// the kernel reset the connection, and the peer could lose the last frames
// still in its receive buffer.
func (st *wsStream) close(code int, text string) {
	st.ping.Stop()
	_ = st.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	t := time.NewTimer(wsCloseGrace)
	select {
	case <-st.reader:
	case <-t.C:
	}
	t.Stop()
	st.cancel()
	_ = st.conn.Close()
	<-st.reader
}
