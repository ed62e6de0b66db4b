package transport

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Close is idempotent and, once it has returned, nothing the client
// started keeps running: not its keepalive and watcher, not the waiters of
// cancelled commands and uploads, not open tunnels.
func TestCloseStopsEveryGoroutine(t *testing.T) {
	h := startHosts(t, 1)[0]
	sock := filepath.Join(h.Dir, "echo.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, l)
	ctx := testContext(t)
	before := runtime.NumGoroutine()

	d, err := NewDialer(fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Dial(ctx, targetFor(t, h))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "echo hi", ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.Exec(cctx, "sleep 30", ExecOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exec = %v", err)
	}
	if err := c.Upload(ctx, "/tmp/x", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	uctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	c.Upload(uctx, "/tmp/big", make([]byte, 64<<20), 0o600)
	if _, err := c.ReadFile(ctx, "/tmp/x"); err != nil {
		t.Fatal(err)
	}
	conn, err := c.DialContext(ctx, "unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close() // left open on purpose until after Close

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Errorf("Err() = %v, want ErrClosed", c.Err())
	}
	select {
	case <-c.Done():
	default:
		t.Error("Done() not closed after Close")
	}
	// x/crypto's and the echo server's own goroutines end right after
	// the connection; allow them a moment.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
