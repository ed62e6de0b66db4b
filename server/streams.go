package server

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
)

// errHijacked tells the handler adapter that the handler took over the
// connection (a websocket): nothing more may be written to w.
var errHijacked = errors.New("connection hijacked")

// streams tracks the long-lived websocket handlers, which http.Server's
// Shutdown does not wait for, so that Close can end them and wait.
type streams struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newStreams() *streams {
	ctx, cancel := context.WithCancel(context.Background())
	return &streams{ctx: ctx, cancel: cancel}
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

// trackStream returns a context that ends with the request or with Close,
// and a done func the handler must call when it returns. It counts the
// stream, by the kind its route names, in Metrics while it is open.
func (s *Server) trackStream(parent context.Context) (context.Context, func()) {
	s.streams.wg.Add(1)
	kind := streamKind(routeFrom(parent))
	s.metrics.StreamOpened(kind)
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(s.streams.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
		s.metrics.StreamClosed(kind)
		s.streams.wg.Done()
	}
}

// Close ends every open stream and waits for their handlers to return.
// Call it after http.Server.Shutdown.
func (s *Server) Close() {
	s.streams.cancel()
	s.streams.wg.Wait()
}
