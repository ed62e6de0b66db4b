package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Bounds of stopping a cancelled command (see remotecmd.go for how).
const (
	// signalGrace is how long Exec waits for the command to die of the
	// KILL signal request before running the kill scan: OpenSSH kills at
	// once, so the wait ends early on every server that honours signals.
	signalGrace = 500 * time.Millisecond
	// killTimeout bounds the kill session (open, scan /proc, kill); the
	// scan reads one small file per process.
	killTimeout = 2500 * time.Millisecond
	// closeWait bounds the wait for the session's end after it was closed;
	// a peer too dead to confirm is left to the keepalive.
	closeWait = time.Second
	// stdinWaitDelay bounds how long Exec waits, after the command ended,
	// for the caller's Stdin to return from Read (as os/exec's WaitDelay).
	stdinWaitDelay = 2 * time.Second
)

// ExecOptions are the optional inputs of Exec.
type ExecOptions struct {
	// Stdin, if not nil, is copied to the command's standard input until
	// EOF. Without it the command reads /dev/null.
	Stdin io.Reader
	// Env is set in the command's environment. Names must be shell
	// identifiers. Values travel in the command line, visible to the
	// node's process list while the command starts: pass secrets on Stdin
	// or in a file written by Upload.
	Env map[string]string
	// Stdout and Stderr, if not nil, are taps: they get the command's
	// output as it arrives, for a caller that shows it live, in addition
	// to (not instead of) the capped copies that make the ExecResult,
	// which they never change. A tap's Write must not block: it runs on
	// the goroutine reading the SSH channel, so a slow tap stalls that
	// stream and, once the window is full, the command itself. A tap that
	// fails (an error or a short write) gets nothing more; Exec goes on
	// and its result is whole. A tap gets no write after Exec returns,
	// not even after a cancel. The two taps are written from two
	// goroutines, unless they are the same writer (==), which is then
	// written from one at a time.
	Stdout, Stderr io.Writer
}

// ExecResult is what a command produced. Each stream is capped at
// Options.MaxOutput bytes: stdout keeps its beginning, stderr its end.
type ExecResult struct {
	Stdout, Stderr []byte
	// ExitCode is the command's exit status, -1 if it was killed by a
	// signal.
	ExitCode int
	// Truncated says that output beyond the cap was dropped.
	Truncated bool
}

// Exec runs cmd with /bin/sh on the node and waits for it to end. A
// non-zero exit status is returned with the result as a *NodeError
// wrapping an *ExitError. When ctx ends first, the remote command and every
// process it started are killed, and Exec returns within about 5 s with an
// error matching ctx.Err() and an empty result; the taps of opts have had
// what arrived until then.
//
// If Stdin blocks in Read after the command has ended, Exec returns after
// stdinWaitDelay and the goroutine copying Stdin ends when that Read
// returns.
func (c *Client) Exec(ctx context.Context, cmd string, opts ExecOptions) (ExecResult, error) {
	op := fmt.Sprintf("exec %q", shorten(cmd, maxErrCmd))
	if err := ctx.Err(); err != nil {
		return ExecResult{}, c.nodeError(op, err, "")
	}
	id := newExecID()
	remote, err := remoteCommand(id, cmd, opts.Env, opts.Stdin == nil)
	if err != nil {
		return ExecResult{}, c.nodeError(op, err, "")
	}
	release, err := c.acquireSession(ctx, op)
	if err != nil {
		return ExecResult{}, err
	}
	defer release()
	sess, err := c.newSession(op)
	if err != nil {
		return ExecResult{}, err
	}
	defer sess.Close()
	stdout := &headBuffer{max: c.opts.MaxOutput}
	stderr := &tailBuffer{max: c.opts.MaxOutput}
	outTap, errTap := newTaps(opts.Stdout, opts.Stderr)
	// Deferred after sess.Close, so run before it: no tap write follows
	// Exec's return, whatever the session still delivers.
	defer outTap.close()
	defer errTap.close()
	sess.Stdout, sess.Stderr = teeWriter{stdout, outTap}, teeWriter{stderr, errTap}
	stdin, err := sess.StdinPipe()
	if err != nil {
		return ExecResult{}, c.nodeError(op, err, "")
	}
	if err := sess.Start(remote); err != nil {
		return ExecResult{}, c.sessionError(op, err)
	}
	var copied chan struct{}
	if opts.Stdin != nil {
		copied = make(chan struct{})
		go func() {
			defer close(copied)
			io.Copy(stdin, opts.Stdin) // a failed write means the command stopped reading
			stdin.Close()
		}()
	}
	// The client owns the waiter: after a cancel Exec may return before a
	// dead peer confirms the session's end; Close then ends it.
	waited := make(chan error, 1)
	if !c.spawn(func() { waited <- sess.Wait() }) {
		return ExecResult{}, c.closedError(op)
	}

	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		c.stop(sess, id, waited)
		return ExecResult{}, c.nodeError(op, ctx.Err(), "")
	}
	if copied != nil {
		timer := time.NewTimer(stdinWaitDelay)
		select {
		case <-copied:
		case <-timer.C:
		}
		timer.Stop()
	}
	res := ExecResult{
		Stdout:    stdout.bytes(),
		Stderr:    stderr.bytes(),
		Truncated: stdout.truncated() || stderr.truncated(),
	}
	var exitErr *ssh.ExitError
	switch {
	case werr == nil:
		return res, nil
	case errors.As(werr, &exitErr):
		ee := &ExitError{Cmd: cmd, Code: exitErr.ExitStatus(), Signal: exitErr.Signal(), Stderr: tail(res.Stderr, maxErrStderr)}
		if ee.Signal != "" {
			ee.Code = -1
		}
		res.ExitCode = ee.Code
		return res, c.nodeError("exec", ee, "")
	default:
		res.ExitCode = -1
		return res, c.sessionError(op, werr)
	}
}

// stop kills the command of a cancelled Exec: the KILL signal request
// first, then, if the command is still there after signalGrace, the kill
// scan; then it closes the session and waits at most closeWait for its
// end.
func (c *Client) stop(sess *ssh.Session, id string, waited <-chan error) {
	if !c.cancel.noSignal {
		sess.Signal(ssh.SIGKILL) // a failure leaves the other mechanisms
		timer := time.NewTimer(signalGrace)
		select {
		case <-waited:
			timer.Stop()
			return
		case <-timer.C:
		}
	}
	if !c.cancel.noScan {
		c.killScan(id)
	}
	sess.Close()
	timer := time.NewTimer(closeWait)
	defer timer.Stop()
	select {
	case <-waited:
	case <-timer.C:
	}
}

// killScan runs the kill scan for id in a session of its own, outside the
// session limit (maxSessions leaves room for it), and waits at most
// killTimeout. The goroutine belongs to the client: a peer that does not
// answer keeps it until the keepalive or Close ends the connection.
func (c *Client) killScan(id string) {
	done := make(chan struct{})
	if !c.spawn(func() {
		defer close(done)
		sess, err := c.conn.NewSession()
		if err != nil {
			return
		}
		defer sess.Close()
		sess.Run(killCommand(id)) // best effort: the watcher and signal remain
	}) {
		return
	}
	timer := time.NewTimer(killTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
}

// sessionError explains a session that failed without an exit status: the
// connection died under it, or the server refused the command.
func (c *Client) sessionError(op string, err error) error {
	select {
	case <-c.done:
		return c.closedError(op)
	default:
	}
	var missing *ssh.ExitMissingError
	if errors.As(err, &missing) || errors.Is(err, io.EOF) {
		return c.nodeError(op, fmt.Errorf("%w: %w", ErrConnectionLost, err),
			fmt.Sprintf("the session ended without an exit status: check that %s is up", c.target.Node))
	}
	return c.nodeError(op, err, "")
}

// tap hands a command's output to a caller's writer (ExecOptions.Stdout
// or Stderr) until that writer fails or Exec returns; a nil *tap is a tap
// to nowhere. Its lock serialises the writes and makes close wait for a
// write under way, which is how Exec keeps its promise of no write after
// it returns.
type tap struct {
	mu sync.Mutex
	w  io.Writer // nil once failed or closed
}

// newTaps wraps the caller's writers; one writer given for both streams
// gets one tap, so that it is written from one goroutine at a time.
func newTaps(stdout, stderr io.Writer) (outTap, errTap *tap) {
	if stdout != nil {
		outTap = &tap{w: stdout}
	}
	switch {
	case stderr == nil:
	case outTap != nil && sameWriter(stdout, stderr):
		errTap = outTap
	default:
		errTap = &tap{w: stderr}
	}
	return outTap, errTap
}

// write passes p on; the first error or short write stops the tap for
// good (its error is the caller's writer's to report: Exec ignores it).
func (t *tap) write(p []byte) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return
	}
	if n, err := t.w.Write(p); err != nil || n != len(p) {
		t.w = nil
	}
}

// close stops the tap once any write under way has returned.
func (t *tap) close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.w = nil
	t.mu.Unlock()
}

// sameWriter reports whether a and b are the same writer; writers of a
// type that cannot be compared (== panics) count as different, as in
// os/exec.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() { recover() }()
	return a == b
}

// teeWriter writes to a capped buffer, which always takes all of p, then
// to a tap; it never fails, so the tap cannot fail or short the command's
// output.
type teeWriter struct {
	buf io.Writer
	tap *tap
}

func (w teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p) // the capped buffers never fail
	w.tap.write(p)
	return len(p), nil
}
