package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Bounds on stopping processes.
const (
	// stopGrace is how long a daemon gets to exit after SIGTERM before it is
	// killed: every daemon here exits in well under a second.
	stopGrace = 5 * time.Second
	// killWait bounds the wait after SIGKILL; a killed process is gone in
	// milliseconds unless it is stuck in the kernel.
	killWait = 10 * time.Second
	// logTailLines is how much of each log a failed test prints.
	logTailLines = 40
)

// process is one child process the testbed started and owns: its output
// goes to a log file, and a goroutine waits for it so that done closes when
// it exits. It is started with a parent-death signal, so it dies with the
// test binary even when no cleanup runs.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error // valid once done is closed
}

// startProcess starts cmd with stdout and stderr appended to logPath.
func startProcess(name string, cmd *exec.Cmd, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	defer f.Close() // the child has its own copy once started
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid is the process ID (the daemon's own: nsenter and the cgroup prologue
// exec into it without forking).
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended and the end of its log; call
// it only after done is closed.
func (p *process) exitError() error {
	return fmt.Errorf("%w: %s (%v); end of %s:\n%s", ErrExited, p.name, p.waitErr, p.logPath, tailFile(p.logPath, logTailLines))
}

// stop sends SIGTERM, waits up to grace, then sends SIGKILL and waits up to
// killWait. A grace of 0 kills at once. Stopping an exited process is a
// no-op.
func (p *process) stop(grace time.Duration) error {
	if grace > 0 && !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
			return nil
		case <-timer.C:
		}
	}
	if !p.exited() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	timer := time.NewTimer(killWait)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		return fmt.Errorf("%s (pid %d) did not exit %s after SIGKILL", p.name, p.pid(), killWait)
	}
}

// tailFile returns the last n lines of a file, or a note saying why it
// cannot.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	data = bytes.TrimRight(data, "\n")
	lines := strings.Split(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stopAll stops processes in reverse start order and joins the failures.
func stopAll(procs []*process, grace time.Duration) error {
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if procs[i] == nil {
			continue
		}
		if err := procs[i].stop(grace); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
