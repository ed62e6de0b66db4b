package hosts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// fakeExecutor records the command lines it is handed and answers per
// host: exit 3 on "h2", unreachable on "h3".
type fakeExecutor struct{ lines chan string }

func (f fakeExecutor) Exec(ctx context.Context, t Target, cmd string) (transport.ExecResult, error) {
	f.lines <- t.Name + ": " + cmd
	switch t.Name {
	case "h2":
		return transport.ExecResult{Stderr: []byte("no")}, &transport.NodeError{Node: t.Name, Op: "exec", Err: &transport.ExitError{Code: 3}}
	case "h3":
		return transport.ExecResult{}, &transport.NodeError{Node: t.Name, Op: "connect", Err: errors.New("connection refused")}
	}
	return transport.ExecResult{Stdout: []byte("hi\n")}, nil
}

// A command runs on every host its selector matches, quoted word by word,
// and its record says who ran what where and each host's result; bad
// requests name the field and run nothing.
func TestRunCommand(t *testing.T) {
	store := storagetest.Open(t)
	fe := fakeExecutor{lines: make(chan string, 10)}
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: &fakeProber{}, Executor: fe})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := testKey(t)
	for i, n := range []string{"h1", "h2", "h3", "other"} {
		group := "e2e"
		if n == "other" {
			group = "prod"
		}
		if _, err := m.Create(ctx, model.HostSpec{Name: n, Address: "10.0.0." + string(rune('1'+i)), SSHKey: key, Labels: map[string]string{"group": group}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []struct {
		name, selector string
		req            CommandRequest
		field          string
	}{
		{"", "group=e2e", CommandRequest{}, "command"},
		{"", "group=e2e", CommandRequest{Command: []string{"true"}, TimeoutSeconds: 7200}, "timeoutSeconds"},
		{"", "group in (", CommandRequest{Command: []string{"true"}}, "selector"},
		{"", "group=none", CommandRequest{Command: []string{"true"}}, "selector"},
	} {
		_, err := m.RunCommand(ctx, "admin", bad.name, bad.selector, bad.req)
		var verrs validation.Errors
		if !errors.As(err, &verrs) || verrs[0].Field != bad.field {
			t.Errorf("RunCommand(%q, %+v) = %v, want an error naming %s", bad.selector, bad.req, err, bad.field)
		}
	}
	if _, err := m.RunCommand(ctx, "admin", "nope", "", CommandRequest{Command: []string{"true"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a command on an unknown host = %v", err)
	}

	rec, err := m.RunCommand(ctx, "alice", "", "group=e2e", CommandRequest{Command: []string{"echo", "it's $HOME; rm -rf /"}})
	if err != nil || rec.State != "Running" || strings.Join(rec.Hosts, ",") != "h1,h2,h3" || rec.StartedBy != "alice" {
		t.Fatalf("RunCommand = %+v, %v", rec, err)
	}
	for range 3 {
		if line := <-fe.lines; !strings.HasSuffix(line, `: 'echo' 'it'\''s $HOME; rm -rf /'`) {
			t.Errorf("command line %s: the argv was not quoted word by word", line)
		}
	}
	m.cmdWG.Wait()
	if rec, err = m.Command(rec.ID); err != nil {
		t.Fatal(err)
	}
	byHost := map[string]CommandResult{}
	for _, r := range rec.Results {
		byHost[r.Host] = r
	}
	if r := byHost["h1"]; rec.State != "Finished" || r.ExitCode != 0 || r.Stdout != "hi\n" {
		t.Errorf("h1: %+v (state %s)", r, rec.State)
	}
	if r := byHost["h2"]; r.ExitCode != 3 || r.Stderr != "no" || r.Error != "" {
		t.Errorf("h2: %+v, want exit code 3 with its stderr", r)
	}
	if r := byHost["h3"]; r.ExitCode != -1 || !strings.Contains(r.Error, "connection refused") {
		t.Errorf("h3: %+v, want -1 and why", r)
	}
	if list, err := m.Commands(); err != nil || len(list) != 1 || list[0].ID != rec.ID {
		t.Errorf("Commands = %d records, %v", len(list), err)
	}
	if _, err := m.Command("nope"); !errors.Is(err, ErrCommandNotFound) {
		t.Errorf("an unknown command = %v", err)
	}
}

// An executor that cannot stream still feeds its followers: each host's
// output when it has finished, then its done marker.
func TestFollowCommandPlainExecutor(t *testing.T) {
	fe := fakeExecutor{lines: make(chan string)}
	m := newStreamManager(t, fe, "h1")
	rec, err := m.RunCommand(context.Background(), "alice", "h1", "", CommandRequest{Command: []string{"echo", "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	_, ch, stop, _ := m.FollowCommand(rec.ID)
	defer stop()
	<-fe.lines
	if got, want := drain(t, ch), []CommandChunk{{Host: "h1", Stream: "stdout", Data: "hi\n"}, {Host: "h1", Done: true}}; !reflect.DeepEqual(got, want) {
		t.Errorf("chunks: %+v, want %+v", got, want)
	}
	if r := finished(t, m, rec.ID).Results[0]; r.Stdout != "hi\n" {
		t.Errorf("record: %+v", r)
	}
}

// testSSHD is an in-process SSH server that runs each exec request with
// sh -c in a process group of its own, as sshd does, and kills that group
// on a "signal" request: enough of sshd to test the SSH executor without
// root.
type testSSHD struct {
	addr, hostKey string
	clientKey     []byte
	// mu guards pgids, the process groups started, killed at cleanup so
	// that a failed test does not wait for its commands.
	mu    sync.Mutex
	pgids []int
}

func startTestSSHD(t *testing.T) *testSSHD {
	t.Helper()
	hostSigner, err := ssh.ParsePrivateKey([]byte(testKey(t)))
	if err != nil {
		t.Fatal(err)
	}
	d := &testSSHD{hostKey: transport.FormatHostKey(hostSigner.PublicKey()), clientKey: []byte(testKey(t))}
	client, err := ssh.ParsePrivateKey(d.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(k.Marshal(), client.PublicKey().Marshal()) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.addr = ln.Addr().String()
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			conns = append(conns, nc)
			d.mu.Unlock()
			wg.Go(func() { d.serve(nc, cfg) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		d.mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		for _, pg := range d.pgids {
			syscall.Kill(-pg, syscall.SIGKILL)
		}
		d.mu.Unlock()
		wg.Wait()
	})
	return d
}

func (d *testSSHD) serve(nc net.Conn, cfg *ssh.ServerConfig) {
	sc, chans, reqs, err := ssh.NewServerConn(nc, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for nch := range chans {
		ch, creqs, err := nch.Accept()
		if err != nil {
			continue
		}
		wg.Go(func() { d.session(ch, creqs) })
	}
}

// session runs one exec request; the command's stdin is the channel, so
// that it sees the end of the connection.
func (d *testSSHD) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var cmd *exec.Cmd
	exited := make(chan struct{})
	for req := range reqs {
		switch req.Type {
		case "exec":
			var p struct{ Command string }
			if ssh.Unmarshal(req.Payload, &p) != nil || cmd != nil {
				req.Reply(false, nil)
				continue
			}
			cmd = exec.Command("sh", "-c", p.Command)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
			stdin, _ := cmd.StdinPipe()
			if err := cmd.Start(); err != nil {
				req.Reply(false, nil)
				return
			}
			req.Reply(true, nil)
			d.mu.Lock()
			d.pgids = append(d.pgids, cmd.Process.Pid)
			d.mu.Unlock()
			go func() {
				io.Copy(stdin, ch)
				stdin.Close()
			}()
			go func() {
				defer close(exited)
				cmd.Wait()
				if code := cmd.ProcessState.ExitCode(); code >= 0 {
					ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
				}
				ch.Close()
			}()
		case "signal":
			if cmd != nil {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		default:
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
	if cmd != nil {
		<-exited
	}
}

// target is d's host as a command target, its host key pinned.
func (d *testSSHD) target(t *testing.T) Target {
	host, port, _ := net.SplitHostPort(d.addr)
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Name: "h1", Address: host, Port: p, User: "root", Key: d.clientKey, HostKey: d.hostKey}
}

// chanWriter hands each write to a channel, for a test to see output as
// it comes.
type chanWriter chan string

func (w chanWriter) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// The SSH executor streams through the transport's taps: the output
// arrives while the command still waits for the test, the argv runs word
// by word, and the result (the record's) and the exit status are Exec's.
// The transport's own tests cover the rest (kill on cancel, host key
// pinning, error classes).
func TestSSHExecStream(t *testing.T) {
	d := startTestSSHD(t)
	flag := filepath.Join(t.TempDir(), "go-on")
	script := `echo one; while [ ! -e "$1" ]; do sleep 0.02; done; echo two; echo "it's $2" >&2; exit 3`
	stdout, stderr := make(chanWriter, 10), make(chanWriter, 10)
	type outcome struct {
		res transport.ExecResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := sshProber{timeout: 5 * time.Second}.ExecStream(context.Background(), d.target(t),
			transport.ShellJoin([]string{"sh", "-c", script, "sh", flag, "$HOME; x"}), stdout, stderr)
		done <- outcome{res, err}
	}()
	select {
	case got := <-stdout:
		if got != "one\n" {
			t.Fatalf("first output %q, want one", got)
		}
	case o := <-done:
		t.Fatalf("ExecStream returned %+v before any output", o)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := <-done
	var exit *transport.ExitError
	var ne *transport.NodeError
	if !errors.As(o.err, &exit) || exit.Code != 3 || !errors.As(o.err, &ne) || ne.Node != "h1" {
		t.Errorf("ExecStream = %v, want exit status 3 from h1", o.err)
	}
	if got, errOut := <-stdout, <-stderr; got != "two\n" || errOut != "it's $HOME; x\n" {
		t.Errorf("then %q and stderr %q", got, errOut)
	}
	if string(o.res.Stdout) != "one\ntwo\n" || string(o.res.Stderr) != "it's $HOME; x\n" || o.res.ExitCode != 3 {
		t.Errorf("result %+v, want the whole output and exit code 3", o.res)
	}
}
