package server

import (
	"errors"
	"net/http"
)

// handlerFunc is the shape of every API handler: it writes a response and
// returns nil, or writes nothing and returns the error for writeError to
// render. A handler that took over the connection returns errHijacked.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h to http.Handler, rendering its error. An error returned
// after h has started the response can no longer be sent, so it is only
// logged.
func (s *Server) handle(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noteRequest(r) // route and user, for the access log
		tw := &trackingWriter{ResponseWriter: w}
		err := h(tw, r)
		switch {
		case err == nil, errors.Is(err, errHijacked):
		case tw.started:
			s.log.Warn("request failed after its response started", "method", r.Method, "path", r.URL.Path, "error", err)
		default:
			s.writeError(w, r, err)
		}
	})
}

// trackingWriter notes whether a response has started. Unwrap lets
// http.ResponseController (and so the websocket upgrader) reach the
// connection underneath.
type trackingWriter struct {
	http.ResponseWriter
	started bool
}

func (w *trackingWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(b)
}

func (w *trackingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
