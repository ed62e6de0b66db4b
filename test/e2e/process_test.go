package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// instance is one running singlecloud process with its own directory
// (database, key file, admin password file) and log.
type instance struct {
	t        *testing.T
	dir      string
	addr     string
	URL      string
	password string
	args     []string
	// workDir, when set, is the process's working directory and the
	// server gets no --db: it finds its files by its defaults, and the
	// admin password is read from passwordFile.
	workDir      string
	passwordFile string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// startInstance runs singlecloud in dir (a fresh temp dir when empty) on
// a free loopback port, waits until it answers, and stops it at the end of
// the test. The log is printed if the test fails.
func startInstance(t *testing.T, dir string, args ...string) *instance {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	inst := &instance{t: t, dir: dir, addr: freePort(t), args: args}
	inst.URL = "http://" + inst.addr
	inst.start()
	t.Cleanup(func() {
		inst.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("singlecloud log:\n%s", inst.logText())
		}
	})
	return inst
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (inst *instance) start() {
	t := inst.t
	t.Helper()
	args := append([]string{"--listen", inst.addr, "--db", filepath.Join(inst.dir, "singlecloud.db")}, inst.args...)
	pwFile := filepath.Join(inst.dir, "singlecloud.admin-password")
	if inst.workDir != "" {
		args = append([]string{"--listen", inst.addr}, inst.args...)
		pwFile = inst.passwordFile
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = inst.workDir
	cmd.Env = append(os.Environ(), "SINGLECLOUD_ADMIN_PASSWORD=")
	inst.mu.Lock()
	if inst.log == nil {
		inst.log = &bytes.Buffer{}
	}
	cmd.Stdout = &lockedWriter{mu: &inst.mu, w: inst.log}
	cmd.Stderr = cmd.Stdout
	inst.mu.Unlock()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start singlecloud: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	inst.mu.Lock()
	inst.cmd, inst.done = cmd, done
	inst.mu.Unlock()
	inst.waitServing(20 * time.Second)
	if inst.password == "" {
		b, err := os.ReadFile(pwFile)
		if err != nil {
			t.Fatalf("read the generated admin password: %v", err)
		}
		inst.password = strings.TrimSpace(string(b))
	}
}

// waitServing polls until the API answers (any HTTP status but the 503 of
// a process still starting) or d passes.
func (inst *instance) waitServing(d time.Duration) {
	inst.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-inst.done:
			inst.t.Fatalf("singlecloud exited during start:\n%s", inst.logText())
		default:
		}
		resp, err := http.Get(inst.URL + "/apis/zcloud.cn/v1/clusters")
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			// Until start-up has finished every call answers 503
			// "starting up"; any other answer is the API's.
			if resp.StatusCode != http.StatusServiceUnavailable || !bytes.Contains(body, []byte("starting up")) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	inst.t.Fatalf("singlecloud did not answer within %s:\n%s", d, inst.logText())
}

// stop sends sig and waits (bounded) for the process to exit.
func (inst *instance) stop(sig syscall.Signal) {
	inst.mu.Lock()
	cmd, done := inst.cmd, inst.done
	inst.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		inst.t.Errorf("singlecloud did not exit within 20s of %s", sig)
		_ = cmd.Process.Kill()
		<-done
	}
	inst.mu.Lock()
	inst.cmd = nil
	inst.mu.Unlock()
}

// restart stops the process with sig (SIGKILL for a crash) and starts it
// again on the same directory and port.
func (inst *instance) restart(sig syscall.Signal) {
	inst.stop(sig)
	inst.start()
}

func (inst *instance) exitCode() int {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if inst.cmd == nil || inst.cmd.ProcessState == nil {
		return -1
	}
	return inst.cmd.ProcessState.ExitCode()
}

func (inst *instance) logText() string {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	return inst.log.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// eventually polls cond every 50ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s; last seen: %s", what, d, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
