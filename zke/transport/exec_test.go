package transport

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestExec(t *testing.T) {
	h := startHosts(t, 1)[0]
	opts := fastOptions()
	opts.MaxOutput = 1 << 20
	c := dialHost(t, h, opts)
	ctx := testContext(t)

	tests := []struct {
		name          string
		cmd           string
		opts          ExecOptions
		wantStdout    string
		wantStderr    string
		wantCode      int
		wantTruncated bool
	}{
		{name: "stdout", cmd: "hostname", wantStdout: h.Name + "\n"},
		{name: "runs as root in the host", cmd: "id -u; cat /proc/sys/kernel/hostname", wantStdout: "0\n" + h.Name + "\n"},
		{name: "exit code and stderr", cmd: "echo out; echo 'it failed' >&2; exit 3", wantStdout: "out\n", wantStderr: "it failed\n", wantCode: 3},
		{name: "env", cmd: `echo "$GREETING"`, opts: ExecOptions{Env: map[string]string{"GREETING": "it's me"}}, wantStdout: "it's me\n"},
		{name: "stdin", cmd: "wc -c; cat >/dev/null", opts: ExecOptions{Stdin: bytes.NewReader(bytes.Repeat([]byte("x"), 300000))}, wantStdout: "300000\n"},
		{name: "no stdin reads nothing", cmd: "cat; echo end", wantStdout: "end\n"},
		{name: "output capped", cmd: "head -c 3000000 /dev/zero; echo done >&2", wantStdout: strings.Repeat("\x00", 1<<20), wantStderr: "done\n", wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Exec(ctx, tt.cmd, tt.opts)
			if tt.wantCode != 0 {
				var exitErr *ExitError
				var ne *NodeError
				if !errors.As(err, &exitErr) || !errors.As(err, &ne) {
					t.Fatalf("Exec = %v, want a *NodeError with an *ExitError", err)
				}
				if exitErr.Code != tt.wantCode || exitErr.Stderr != tt.wantStderr || exitErr.Cmd != tt.cmd || ne.Node != h.Name {
					t.Errorf("ExitError %+v in %+v", exitErr, ne)
				}
				if !strings.Contains(err.Error(), strings.TrimSpace(tt.wantStderr)) {
					t.Errorf("error %q lacks the stderr", err)
				}
			} else if err != nil {
				t.Fatalf("Exec = %v", err)
			}
			if string(res.Stdout) != tt.wantStdout || string(res.Stderr) != tt.wantStderr || res.ExitCode != tt.wantCode || res.Truncated != tt.wantTruncated {
				t.Errorf("result stdout %q stderr %q code %d truncated %v; want %q %q %d %v",
					shorten(string(res.Stdout), 40), res.Stderr, res.ExitCode, res.Truncated,
					shorten(tt.wantStdout, 40), tt.wantStderr, tt.wantCode, tt.wantTruncated)
			}
		})
	}

	// More commands at once than sshd's default MaxSessions: they queue.
	t.Run("parallel", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 3*maxSessions)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.Exec(ctx, "sleep 0.2", ExecOptions{})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	})
}

// Cancelling Exec kills the remote command by every mechanism, and by each
// alone (servers that ignore signal requests; a kill session that cannot
// run). The testbed's sshd itself ignores signal requests ("session
// signalling requires privilege separation" in its log), so the rows
// without the kill scan show that closing the session suffices.
func TestExecCancelKillsRemoteCommand(t *testing.T) {
	h := startHosts(t, 1)[0]
	tests := []struct {
		name   string
		mech   cancelMechanisms
		stdin  bool
		script string // %s is the sleep command
	}{
		{name: "all mechanisms", script: "%s"},
		{name: "signal and session close", mech: cancelMechanisms{noScan: true}, script: "%s; echo after"},
		{name: "kill scan only", mech: cancelMechanisms{noSignal: true}, script: "%s; echo after"},
		{name: "closing the session only", mech: cancelMechanisms{noSignal: true, noScan: true}, script: "%s; echo after"},
		{name: "background child, session close only", mech: cancelMechanisms{noSignal: true, noScan: true}, script: "setsid %s & wait"},
		{name: "with stdin, kill scan only", mech: cancelMechanisms{noSignal: true}, stdin: true, script: "%s; echo after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialHost(t, h, fastOptions())
			c.cancel = tt.mech
			sleep, pattern := uniqueSleep()
			var opts ExecOptions
			if tt.stdin {
				r := newBlockingReader()
				defer r.Close()
				opts.Stdin = r
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				res ExecResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := c.Exec(ctx, strings.ReplaceAll(tt.script, "%s", sleep), opts)
				done <- result{res, err}
			}()
			waitFor(t, 10*time.Second, "the remote sleep did not start", func() bool { return len(pgrep(t, h, pattern)) > 0 })
			start := time.Now()
			cancel()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Exec did not return after the cancel")
			}
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("Exec returned %s after the cancel, want < 5s", elapsed)
			}
			if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), h.Name) {
				t.Errorf("Exec = %v, want context.Canceled naming %s", r.err, h.Name)
			}
			waitFor(t, 5*time.Second, "the remote sleep survived the cancel", func() bool { return len(pgrep(t, h, pattern)) == 0 })
			// The connection is still usable.
			if _, err := c.Exec(testContext(t), "true", ExecOptions{}); err != nil {
				t.Errorf("Exec after a cancel: %v", err)
			}
		})
	}
}

// A connection that ends under a command (owner's Close, crash, network
// cut) takes the command with it.
func TestExecDiesWithConnection(t *testing.T) {
	h := startHosts(t, 1)[0]
	c := dialHost(t, h, fastOptions())
	sleep, pattern := uniqueSleep()
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), sleep, ExecOptions{})
		done <- err
	}()
	waitFor(t, 10*time.Second, "the remote sleep did not start", func() bool { return len(pgrep(t, h, pattern)) > 0 })
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Exec = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Exec did not return after Close")
	}
	waitFor(t, 5*time.Second, "the remote sleep survived the connection", func() bool { return len(pgrep(t, h, pattern)) == 0 })
	if _, err := c.Exec(context.Background(), "true", ExecOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Exec on a closed client = %v, want ErrClosed", err)
	}
}

// blockingReader blocks in Read until closed, like a stream that has
// nothing more to say yet.
type blockingReader struct {
	once sync.Once
	done chan struct{}
}

func newBlockingReader() *blockingReader { return &blockingReader{done: make(chan struct{})} }

func (r *blockingReader) Read([]byte) (int, error) {
	<-r.done
	return 0, errors.New("closed")
}

func (r *blockingReader) Close() error {
	r.once.Do(func() { close(r.done) })
	return nil
}
