// Package etcdtest runs a real etcd (the one `make testbin` builds) on
// loopback for tests, and opens storage.Etcd stores on it, each under its own
// prefix so that tests sharing one etcd see nothing of each other.
//
// Outside CI a missing etcd binary skips the test; with CI=true it fails it,
// like testbed.Require.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/test/testbed"
)

// Server is an etcd process listening on loopback.
type Server struct {
	// Endpoint is its client URL.
	Endpoint string
	cmd      *exec.Cmd
	dir      string
	exited   chan struct{}
}

// Binary returns the path of the testbin's etcd, or an error saying how to
// build it.
func Binary() (string, error) {
	dir, _ := testbed.Testbin()
	path := filepath.Join(dir, "bin", "etcd")
	if _, err := os.Stat(path); err != nil {
		return path, fmt.Errorf("%w: %s is not built: run make testbin (or set %s)", testbed.ErrMissing, path, testbed.TestbinEnv)
	}
	return path, nil
}

// require skips (outside CI) or fails (CI=true) tb when etcd is missing.
func require(tb testing.TB) string {
	tb.Helper()
	path, err := Binary()
	if err != nil {
		if testbed.CI() {
			tb.Fatalf("etcdtest: %v", err)
		}
		tb.Skipf("etcdtest: %v", err)
	}
	return path
}

// Start starts a new etcd with its data in tb's temporary directory and
// stops it when tb ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := require(tb)
	s, err := start(bin, tb.TempDir())
	if err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

var (
	sharedMu sync.Mutex
	shared   *Server
)

// Shared returns the etcd shared by every test of the test binary, started
// on first use. TestMain must call StopShared after m.Run.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	bin := require(tb)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		dir, err := os.MkdirTemp("", "etcdtest-")
		if err != nil {
			tb.Fatalf("etcdtest: %v", err)
		}
		s, err := start(bin, dir)
		if err != nil {
			os.RemoveAll(dir)
			tb.Fatalf("etcdtest: %v", err)
		}
		shared = s
	}
	return shared
}

// StopShared stops the shared etcd, if one was started, and removes its data.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Stop()
		os.RemoveAll(shared.dir)
		shared = nil
	}
}

var prefixes atomic.Int64

// Open opens a storage.Etcd on the shared etcd under a prefix of its own,
// with a key file in tb's temporary directory, and closes it when tb ends.
// opts may set anything but Endpoints; an empty Prefix or KeyFile is
// chosen here.
func Open(tb testing.TB, opts storage.EtcdOptions) *storage.Etcd {
	tb.Helper()
	s := Shared(tb)
	opts.Endpoints = []string{s.Endpoint}
	if opts.Prefix == "" {
		opts.Prefix = UniquePrefix(tb)
	}
	if opts.KeyFile == "" {
		opts.KeyFile = filepath.Join(tb.TempDir(), "singlecloud.key")
	}
	db, err := storage.OpenEtcd(context.Background(), opts)
	if err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			tb.Errorf("etcdtest: %v", err)
		}
	})
	return db
}

// UniquePrefix returns a prefix no other store of this process uses.
func UniquePrefix(tb testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name())
	return fmt.Sprintf("/test/%d-%d-%s/", os.Getpid(), prefixes.Add(1), name)
}

func start(bin, dir string) (*Server, error) { return startWith(bin, dir, nil) }

// startWith starts an etcd, serving https when files is not nil.
func startWith(bin, dir string, files *TLSFiles) (*Server, error) {
	var lastErr error
	for range 3 { // a free port may be taken between choosing and binding it
		client, peer := freePort(), freePort()
		if client == 0 || peer == 0 {
			return nil, errors.New("no free loopback port")
		}
		s, err := startOn(bin, dir, client, peer, files)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOn(bin, dir string, clientPort, peerPort int, files *TLSFiles) (*Server, error) {
	scheme := "http"
	var health *http.Client
	if files != nil {
		cfg, err := files.clientConfig()
		if err != nil {
			return nil, err
		}
		scheme, health = "https", &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	clientURL := fmt.Sprintf("%s://127.0.0.1:%d", scheme, clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	data := filepath.Join(dir, fmt.Sprintf("etcd-%d", clientPort))
	logPath := data + ".log"
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := []string{"--name=etcdtest", "--data-dir=" + data,
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=etcdtest=" + peerURL, "--initial-cluster-state=new",
		"--unsafe-no-fsync", "--log-level=warn"}
	if files != nil {
		args = append(args, files.args()...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The etcd dies with the test binary, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Endpoint: clientURL, cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			out, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("etcd exited at start: %s", tail(string(out)))
		default:
		}
		if healthy(health, clientURL) {
			return s, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("etcd on %s not healthy after 30s (log %s)", clientURL, logPath)
}

// Stop kills the etcd and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	<-s.exited
}

func healthy(c *http.Client, url string) bool {
	if c == nil {
		c = &http.Client{Timeout: time.Second}
	}
	resp, err := c.Get(url + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
