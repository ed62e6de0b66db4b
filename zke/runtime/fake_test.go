package runtime

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
)

// fakeDaemon is an HTTP server on a unix socket that answers /_ping and
// /version like dockerd and routes versioned paths, with the /vX.Y prefix
// stripped, to mux. Unit tests use it only to steer failures and check
// what the client sends; behaviour is tested against real dockerd in
// docker_test.go.
type fakeDaemon struct {
	socket string
	mux    *http.ServeMux
	prefix *regexp.Regexp // the /vX.Y of versioned paths

	mu       sync.Mutex
	api      string // ApiVersion reported by /version
	minAPI   string
	versions []string // versions of the requests received
}

func newFakeDaemon(t *testing.T) *fakeDaemon {
	t.Helper()
	// Unix socket paths are limited to 108 bytes: t.TempDir() can be
	// longer.
	dir, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := &fakeDaemon{socket: filepath.Join(dir, "docker.sock"), mux: http.NewServeMux(), prefix: regexp.MustCompile(`^/v(\d+\.\d+)(/.*)$`), api: "1.41", minAPI: "1.12"}
	l, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return f
}

func (f *fakeDaemon) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	api, minAPI := f.api, f.minAPI
	f.mu.Unlock()
	path := r.URL.Path
	if m := f.prefix.FindStringSubmatch(path); m != nil {
		f.mu.Lock()
		f.versions = append(f.versions, m[1])
		f.mu.Unlock()
		path = m[2]
	}
	switch path {
	case "/_ping":
		w.Header().Set("Api-Version", api)
		w.Write([]byte("OK"))
		return
	case "/version":
		json.NewEncoder(w).Encode(map[string]string{"Version": "20.10.24", "ApiVersion": api, "MinAPIVersion": minAPI, "Os": "linux", "Arch": "amd64"})
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = path
	f.mux.ServeHTTP(w, r2)
}

// usedVersions returns the API versions of the requests received so far.
func (f *fakeDaemon) usedVersions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.versions...)
}

// client returns a Docker on the fake's socket.
func (f *fakeDaemon) client(t *testing.T, opts Options) *Docker {
	t.Helper()
	return newClient(t, &net.Dialer{}, f.socket, opts)
}

func newClient(t *testing.T, d Dialer, socket string, opts Options) *Docker {
	t.Helper()
	if opts.Node == "" {
		opts.Node = "node1"
	}
	if opts.Cluster == "" {
		opts.Cluster = "c1"
	}
	c, err := New(d, socket, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialFunc adapts a function to Dialer.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
