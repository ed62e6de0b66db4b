package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The scripts of remotecmd.go run here under a local bash, the way sshd
// runs a session's command ($SHELL -c <command>).

// runLocal starts the remote command line under bash in a process group
// of its own (removed at the end of the test) with stdin from a pipe.
func runLocal(t *testing.T, line string) (*exec.Cmd, io.WriteCloser, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		stdin.Close()
		cmd.Wait()
	})
	return cmd, stdin, &out
}

// processesWith returns the PIDs of the processes carrying the exec id.
func processesWith(id string) []int {
	files, _ := filepath.Glob("/proc/[0-9]*/environ")
	var pids []int
	for _, f := range files {
		env, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(env, []byte(execIDVar+"="+id)) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(f, "/")[2])
		pids = append(pids, pid)
	}
	return pids
}

// waitGone waits until no process carries id, at most 5 s.
func waitGone(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := processesWith(id)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the command still run", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStarted waits until n processes carry id, at most 5 s.
func waitStarted(t *testing.T, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(processesWith(id)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %v of %d processes started", processesWith(id), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShellQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", `a "b" $c \d`, "line\nbreak", "'''", "$(touch /tmp/x)"} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("shellQuote(%q) printed %q, %v", s, out, err)
		}
	}
}

func TestRemoteCommandRuns(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		env      map[string]string
		watched  bool
		wantOut  string
		wantCode int
	}{
		{name: "output", cmd: "echo hello; echo err >&2", watched: true, wantOut: "hello\nerr\n"},
		{name: "exit code kept", cmd: "exit 7", watched: true, wantCode: 7},
		{name: "stdin is empty when watched", cmd: "cat; echo done", watched: true, wantOut: "done\n"},
		{name: "env with quotes", cmd: `printf '%s|%s' "$A" "$B_2"`, env: map[string]string{"A": "it's $x", "B_2": "two words"}, watched: true, wantOut: "it's $x|two words"},
		{name: "exec id exported", cmd: `test -n "$` + execIDVar + `" && echo yes`, watched: true, wantOut: "yes\n"},
		{name: "unwatched reads stdin", cmd: "cat", watched: false, wantOut: "from stdin"},
		{name: "unwatched exit code", cmd: "exit 3", watched: false, wantCode: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, err := remoteCommand(newExecID(), tt.cmd, tt.env, tt.watched)
			if err != nil {
				t.Fatal(err)
			}
			cmd, stdin, out := runLocal(t, line)
			if !tt.watched {
				io.WriteString(stdin, "from stdin")
				stdin.Close()
			}
			err = cmd.Wait()
			code := 0
			var exitErr *exec.ExitError
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode || out.String() != tt.wantOut {
				t.Fatalf("exit %d output %q, want %d %q", code, out, tt.wantCode, tt.wantOut)
			}
		})
	}
}

func TestRemoteCommandRejectsEnvNames(t *testing.T) {
	for _, name := range []string{"", "1A", "A-B", "A B", "A=B", execIDVar} {
		if _, err := remoteCommand("id", "true", map[string]string{name: "v"}, true); err == nil {
			t.Errorf("env name %q accepted", name)
		}
	}
}

// Closing the session's stdin (what closing an SSH session does) kills the
// command, its children and its grandchildren, and the rest of the
// script does not run.
func TestWatchedCommandDiesWithStdin(t *testing.T) {
	id := newExecID()
	line, err := remoteCommand(id, "sleep 600 & sh -c 'sleep 601'; echo survived", nil, true)
	if err != nil {
		t.Fatal(err)
	}
	cmd, stdin, out := runLocal(t, line)
	waitStarted(t, id, 4) // wrapper, user shell, two sleeps (plus sh -c when not exec'd)
	stdin.Close()
	waitGone(t, id)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the wrapper did not exit")
	}
	if strings.Contains(out.String(), "survived") {
		t.Fatalf("the script went on after the kill: %q", out)
	}
}

// The kill scan finds every process of an unwatched command (one that
// reads the caller's stdin) and nothing else.
func TestKillScan(t *testing.T) {
	id := newExecID()
	line, err := remoteCommand(id, "cat >/dev/null & sleep 602", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	other := newExecID()
	otherLine, _ := remoteCommand(other, "sleep 603", nil, false)
	_, _, _ = runLocal(t, otherLine)
	_, stdin, _ := runLocal(t, line)
	defer stdin.Close()
	waitStarted(t, id, 2) // cat and sleep (sh execs its last command)
	waitStarted(t, other, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "bash", "-c", killCommand(id)).CombinedOutput(); err != nil {
		t.Fatalf("kill command: %v: %s", err, out)
	}
	waitGone(t, id)
	if len(processesWith(other)) == 0 {
		t.Fatal("the kill scan killed another command's processes")
	}
}
