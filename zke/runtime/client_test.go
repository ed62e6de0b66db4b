package runtime

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDaemonErrors(t *testing.T) {
	f := newFakeDaemon(t)
	refused := filepath.Join(filepath.Dir(f.socket), "refused.sock")
	l, err := net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, nobody listens

	var gotNetwork, gotAddr string
	tests := []struct {
		name   string
		dialer Dialer
		socket string
		kind   error
		cause  error
		hint   string
	}{
		{name: "socket missing", dialer: &net.Dialer{}, socket: filepath.Join(filepath.Dir(f.socket), "none.sock"),
			kind: ErrDaemonUnreachable, cause: syscall.ENOENT, hint: "is docker running on node1?"},
		{name: "connection refused", dialer: &net.Dialer{}, socket: refused,
			kind: ErrDaemonUnreachable, cause: syscall.ECONNREFUSED, hint: "is docker running on node1?"},
		// Root may connect to any socket, so the kernel's answer to a user
		// outside the docker group is steered.
		{name: "permission denied", socket: "/var/run/docker.sock",
			dialer: dialFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
				gotNetwork, gotAddr = network, addr
				return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.EACCES)}
			}),
			kind: ErrPermission, cause: syscall.EACCES, hint: "add the SSH user to the docker group on node1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.dialer, tt.socket, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := c.Ping(ctx)
			if !errors.Is(err, tt.kind) || !errors.Is(err, tt.cause) {
				t.Fatalf("Ping = %v, want %v caused by %v", err, tt.kind, tt.cause)
			}
			var de *DaemonError
			if !errors.As(err, &de) || de.Node != "node1" || de.Socket != tt.socket || !strings.Contains(de.Hint, tt.hint) {
				t.Fatalf("DaemonError %+v, want node1, %s and a hint with %q", de, tt.socket, tt.hint)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.hint) || !strings.Contains(err.Error(), tt.socket) {
				t.Errorf("message %q lacks the hint or the socket", err)
			}
		})
	}
	if gotNetwork != "unix" || gotAddr != "/var/run/docker.sock" {
		t.Errorf("the dialer was asked for %s %s, want unix /var/run/docker.sock", gotNetwork, gotAddr)
	}
}

func TestAPIErrors(t *testing.T) {
	f := newFakeDaemon(t)
	f.mux.HandleFunc("GET /containers/{name}/json", func(w http.ResponseWriter, r *http.Request) {
		switch r.PathValue("name") {
		case "boom":
			writeJSON(w, http.StatusInternalServerError, map[string]string{"message": "boom"})
		case "text":
			http.Error(w, "plain failure", http.StatusBadGateway)
		default:
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "No such container: " + r.PathValue("name")})
		}
	})
	f.mux.HandleFunc("DELETE /containers/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusConflict, map[string]string{"message": "removal already in progress"})
	})
	c := f.client(t, Options{})
	ctx := context.Background()

	_, err := c.Inspect(ctx, "boom")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 500 || apiErr.Message != "boom" {
		t.Errorf("Inspect(boom) = %v, want APIError 500 boom", err)
	}
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrDaemonUnreachable) {
		t.Errorf("a 500 matches the wrong sentinel: %v", err)
	}
	if _, err := c.Inspect(ctx, "text"); !errors.As(err, &apiErr) || apiErr.Status != 502 || apiErr.Message != "plain failure" {
		t.Errorf("Inspect(text) = %v, want APIError 502 with the body as message", err)
	}
	_, err = c.Inspect(ctx, "etcd")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "inspect container etcd on node1") {
		t.Errorf("Inspect(etcd) = %v, want ErrNotFound naming container and node", err)
	}
	if err := c.Remove(ctx, "etcd"); err != nil {
		t.Errorf("Remove of a missing container = %v, want nil", err)
	}
	if err := c.removeID(ctx, "abc", "x"); !errors.Is(err, ErrConflict) {
		t.Errorf("removeID = %v, want ErrConflict", err)
	}
}

func TestCallTimeoutAndCancel(t *testing.T) {
	f := newFakeDaemon(t)
	f.mux.HandleFunc("GET /containers/{name}/json", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // a hung daemon
	})
	c := f.client(t, Options{Timeout: 200 * time.Millisecond})

	start := time.Now()
	_, err := c.Inspect(context.Background(), "etcd")
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrDaemonUnreachable) {
		t.Errorf("Inspect on a hung daemon = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Inspect took %s with a 200ms timeout", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	c = f.client(t, Options{Timeout: time.Minute})
	if _, err := c.Inspect(ctx, "etcd"); !errors.Is(err, context.Canceled) {
		t.Errorf("Inspect with a cancelled ctx = %v, want Canceled", err)
	}
}

func TestVersionNegotiation(t *testing.T) {
	tests := []struct {
		api, min string
		want     string // empty: ErrAPIVersion
	}{
		{api: "1.41", min: "1.12", want: "1.41"},
		{api: "1.43", min: "1.12", want: "1.43"},
		{api: "1.50", min: "1.24", want: "1.47"},
		{api: "1.52", min: "1.44", want: "1.47"},
		{api: "1.40", min: "1.12"},
		{api: "1.60", min: "1.50"},
		{api: "x", min: "1.12"},
		{api: "1.45", min: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.api+"/"+tt.min, func(t *testing.T) {
			f := newFakeDaemon(t)
			f.api, f.minAPI = tt.api, tt.min
			f.mux.HandleFunc("GET /info", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, map[string]string{"CgroupVersion": "1", "CgroupDriver": "cgroupfs", "DockerRootDir": "/var/lib/docker"})
			})
			c := f.client(t, Options{})
			info, err := c.Ping(context.Background())
			if tt.want == "" {
				if !errors.Is(err, ErrAPIVersion) {
					t.Fatalf("Ping = %+v, %v; want ErrAPIVersion", info, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Info{Version: "20.10.24", APIVersion: tt.want, OS: "linux", Arch: "amd64", CgroupVersion: "1", CgroupDriver: "cgroupfs", DockerRootDir: "/var/lib/docker"}
			if info != want {
				t.Errorf("Ping = %+v, want %+v", info, want)
			}
			if used := f.usedVersions(); len(used) == 0 || slices.ContainsFunc(used, func(v string) bool { return v != tt.want }) {
				t.Errorf("requests used versions %v, want only %s", used, tt.want)
			}
		})
	}
}

func TestNegotiationRetriedAfterFailure(t *testing.T) {
	f := newFakeDaemon(t)
	f.api = "1.30"
	f.mux.HandleFunc("GET /containers/json", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, []any{}) })
	c := f.client(t, Options{})
	if _, err := c.List(context.Background(), "c1"); !errors.Is(err, ErrAPIVersion) || !strings.Contains(err.Error(), "upgrade Docker") {
		t.Fatalf("List on an old daemon = %v, want ErrAPIVersion saying to upgrade", err)
	}
	f.mu.Lock()
	f.api = "1.41" // the admin upgraded Docker
	f.mu.Unlock()
	if _, err := c.List(context.Background(), "c1"); err != nil {
		t.Fatalf("List after the upgrade = %v", err)
	}
}

// TestCloseLeavesNoGoroutines checks that kept-alive connections are
// released by Close.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	f := newFakeDaemon(t)
	f.mux.HandleFunc("GET /containers/json", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, []any{}) })
	before := runtime.NumGoroutine()
	c, err := New(&net.Dialer{}, f.socket, Options{Node: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.List(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		// The fake server's per-connection goroutines end when the
		// client's side closes; allow for them to notice.
		n := runtime.NumGoroutine()
		if n <= before {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(nil, "", Options{}); err == nil {
		t.Error("New without a dialer succeeded")
	}
	if _, err := New(&net.Dialer{}, "", Options{Timeout: -time.Second}); err == nil {
		t.Error("New with a negative timeout succeeded")
	}
	c, err := New(&net.Dialer{}, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.socket != DefaultSocket || c.timeout != DefaultTimeout || c.Node() != "the node" {
		t.Errorf("defaults: socket %s timeout %s node %s", c.socket, c.timeout, c.Node())
	}
}
