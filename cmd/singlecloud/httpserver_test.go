package main

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// testTimeouts are short connection timeouts injected into the real
// server construction; every wait below is a few times these.
var testTimeouts = httpTimeouts{ReadHeader: 300 * time.Millisecond, Read: 300 * time.Millisecond, Idle: 300 * time.Millisecond}

// closeBound is how long after a timeout a test waits for the close:
// generous, for a loaded 2-core machine.
const closeBound = 5 * time.Second

// serveTest serves h through newHTTPServer with testTimeouts on loopback
// and returns its address.
func serveTest(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, slog.New(slog.DiscardHandler), testTimeouts)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return ln.Addr().String()
}

// waitClosed reads from conn until the server closes it, and returns how
// long that took; it fails the test if the server keeps it open past
// closeBound.
func waitClosed(t *testing.T, conn net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(closeBound))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open for %s", closeBound)
	}
	return time.Since(start)
}

func TestSlowBodyIsCut(t *testing.T) {
	read := make(chan error, 1)
	addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		read <- err
	}))
	conn, err := net.DialTimeout("tcp", addr, closeBound)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")); err != nil {
		t.Fatal(err)
	}
	// Drip the body a byte at a time, far slower than the read timeout
	// allows, until the server gives up on it.
	stop := make(chan struct{})
	dripped := make(chan struct{})
	go func() {
		defer close(dripped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-dripped }()
	select {
	case err := <-read:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("reading the dripped body ended with %v, want a timeout", err)
		}
	case <-time.After(closeBound):
		t.Fatalf("the handler was still reading a dripped body after %s", closeBound)
	}
	waitClosed(t, conn)
}

func TestIdleKeepAliveIsClosed(t *testing.T) {
	addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	conn, err := net.DialTimeout("tcp", addr, closeBound)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(closeBound))
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" || resp.Close {
		t.Fatalf("first request: %d %q close=%v; want a kept-alive 200", resp.StatusCode, body, resp.Close)
	}
	// Now send nothing: the idle connection must be closed.
	if d := waitClosed(t, conn); d < testTimeouts.Idle/2 {
		t.Fatalf("closed after %s, before the idle timeout %s", d, testTimeouts.Idle)
	}
}

func TestDefaultHTTPTimeoutsAreSet(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler), defaultHTTPTimeouts())
	if srv.ReadHeaderTimeout != readHeaderTimeout || srv.ReadTimeout != readTimeout || srv.IdleTimeout != idleTimeout {
		t.Fatalf("server timeouts = %s/%s/%s", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.IdleTimeout)
	}
	if srv.WriteTimeout != 0 {
		t.Fatalf("WriteTimeout = %s; it would cut websocket streams (handlers set their own)", srv.WriteTimeout)
	}
	if srv.ErrorLog == nil {
		t.Fatal("the server's own errors are not logged")
	}
}
