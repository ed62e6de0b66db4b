package main

import (
	"log/slog"
	"net/http"
	"time"
)

// The HTTP server's connection timeouts (issue 8): without them a client
// that sends its request slowly, or opens keep-alive connections and never
// uses them, holds a goroutine and a file descriptor for ever. Handlers'
// write deadlines are set per request by the server package (websockets
// clear theirs after the upgrade), so the http.Server has no WriteTimeout:
// it would cut every long-lived stream.
const (
	// readHeaderTimeout bounds reading a request's line and headers, a few
	// hundred bytes from any real client.
	readHeaderTimeout = 10 * time.Second
	// readTimeout bounds reading a whole request, body included. Bodies
	// are JSON configs and kubeconfigs of kilobytes (8 MiB at most), sent
	// in well under a second; a client dripping its body slower than this
	// has its connection closed. Reading stops mattering once the handler
	// has the body, so long operations are not affected.
	readTimeout = 30 * time.Second
	// idleTimeout closes a keep-alive connection unused this long: a
	// client pays one round trip to reconnect, the server no longer keeps
	// a socket per forgotten connection.
	idleTimeout = 30 * time.Second
)

// httpTimeouts are the connection timeouts of the API's http.Server;
// tests shorten them.
type httpTimeouts struct {
	ReadHeader time.Duration
	Read       time.Duration
	Idle       time.Duration
}

// defaultHTTPTimeouts are the timeouts the binary serves with.
func defaultHTTPTimeouts() httpTimeouts {
	return httpTimeouts{ReadHeader: readHeaderTimeout, Read: readTimeout, Idle: idleTimeout}
}

// newHTTPServer is the API's http.Server: h with the timeouts t, and the
// server's own errors (TLS handshakes, panics) logged as warnings.
func newHTTPServer(h http.Handler, log *slog.Logger, t httpTimeouts) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		IdleTimeout:       t.Idle,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
