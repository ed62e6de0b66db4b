package transport

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tapRecorder is a tap that keeps what it gets; it can fail or
// short-write instead, and it notes writes that overlap (the same writer
// given for both streams) or come after Exec returned.
type tapRecorder struct {
	fail  error // returned by every write, after counting it
	short bool  // every write takes nothing and says nothing
	// first is closed on the first write.
	first     chan struct{}
	firstOnce sync.Once

	mu     sync.Mutex
	data   strings.Builder
	writes int

	busy     atomic.Int32
	overlap  atomic.Bool
	returned atomic.Bool // set by the test once Exec has returned
	late     atomic.Int32
}

func newTapRecorder() *tapRecorder { return &tapRecorder{first: make(chan struct{})} }

func (r *tapRecorder) Write(p []byte) (int, error) {
	if r.busy.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.busy.Add(-1)
	if r.returned.Load() {
		r.late.Add(1)
	}
	r.mu.Lock()
	r.writes++
	if r.fail == nil && !r.short {
		r.data.Write(p)
	}
	r.mu.Unlock()
	r.firstOnce.Do(func() { close(r.first) })
	switch {
	case r.fail != nil:
		return 0, r.fail
	case r.short:
		return 0, nil
	}
	return len(p), nil
}

func (r *tapRecorder) got() (string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.data.String(), r.writes
}

// The taps get the output as it arrives, whole even beyond the cap, while
// the result stays what it is without them; a tap that fails or writes
// short is called once and never again, and fails nothing; one writer
// for both streams is never written from two goroutines at once.
func TestExecTaps(t *testing.T) {
	h := startHosts(t, 1)[0]
	opts := fastOptions()
	opts.MaxOutput = 1 << 10
	c := dialHost(t, h, opts)
	ctx := testContext(t)
	xs := strings.Repeat("x", 5000)

	tests := []struct {
		name string
		cmd  string
		// gated: the command waits for a line on its stdin after its
		// first output, which the test sends once the tap has it.
		gated          bool
		stdout, stderr *tapRecorder
		// shared: stdout's tap is given for stderr too.
		shared bool
		// once: the stdout tap fails, so gets exactly one write.
		once                   bool
		wantStdout, wantStderr string
		wantCode               int
		wantTruncated          bool
		// wantTapOut and wantTapErr are what the taps get, unless once.
		wantTapOut, wantTapErr string
	}{{
		name:  "output arrives before the command ends",
		cmd:   "echo one; read x; echo two; echo oops >&2; exit 3",
		gated: true, stdout: newTapRecorder(), stderr: newTapRecorder(),
		wantStdout: "one\ntwo\n", wantStderr: "oops\n", wantCode: 3,
		wantTapOut: "one\ntwo\n", wantTapErr: "oops\n",
	}, {
		name:   "a failing tap",
		cmd:    "echo one; sleep 0.1; echo two; echo oops >&2",
		stdout: &tapRecorder{fail: errors.New("client gone"), first: make(chan struct{})}, stderr: newTapRecorder(), once: true,
		wantStdout: "one\ntwo\n", wantStderr: "oops\n", wantTapErr: "oops\n",
	}, {
		name:   "a short-writing tap",
		cmd:    "echo one; sleep 0.1; echo two",
		stdout: &tapRecorder{short: true, first: make(chan struct{})}, once: true,
		wantStdout: "one\ntwo\n",
	}, {
		name:   "output beyond the cap",
		cmd:    "head -c 5000 /dev/zero | tr '\\0' x; echo done >&2",
		stdout: newTapRecorder(), stderr: newTapRecorder(),
		wantStdout: xs[:1<<10], wantStderr: "done\n", wantTruncated: true,
		wantTapOut: xs, wantTapErr: "done\n",
	}, {
		name:   "one writer for both streams",
		cmd:    "for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; sleep 0.01; done",
		stdout: newTapRecorder(), shared: true,
		wantStdout: "out1\nout2\nout3\nout4\nout5\nout6\nout7\nout8\n",
		wantStderr: "err1\nerr2\nerr3\nerr4\nerr5\nerr6\nerr7\nerr8\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eo := ExecOptions{}
			if tt.stdout != nil {
				eo.Stdout = tt.stdout
			}
			if tt.stderr != nil {
				eo.Stderr = tt.stderr
			}
			if tt.shared {
				eo.Stderr = tt.stdout
			}
			var gate *io.PipeWriter
			if tt.gated {
				eo.Stdin, gate = io.Pipe()
			}
			type outcome struct {
				res ExecResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := c.Exec(ctx, tt.cmd, eo)
				done <- outcome{res, err}
			}()
			if tt.gated {
				select {
				case <-tt.stdout.first:
				case <-time.After(10 * time.Second):
					t.Fatal("the tap got nothing while the command waited")
				}
				if got, _ := tt.stdout.got(); got != "one\n" {
					t.Errorf("tap while the command waits: %q, want one", got)
				}
				select {
				case o := <-done:
					t.Fatalf("Exec returned %v before the command was let go", o.err)
				default:
				}
				gate.Write([]byte("go\n"))
				gate.Close()
			}
			o := <-done
			var exitErr *ExitError
			switch {
			case tt.wantCode != 0 && (!errors.As(o.err, &exitErr) || exitErr.Code != tt.wantCode):
				t.Errorf("Exec = %v, want exit status %d", o.err, tt.wantCode)
			case tt.wantCode == 0 && o.err != nil:
				t.Errorf("Exec = %v", o.err)
			}
			if string(o.res.Stdout) != tt.wantStdout || string(o.res.Stderr) != tt.wantStderr || o.res.ExitCode != tt.wantCode || o.res.Truncated != tt.wantTruncated {
				t.Errorf("result stdout %q stderr %q code %d truncated %v; want %q %q %d %v",
					shorten(string(o.res.Stdout), 40), o.res.Stderr, o.res.ExitCode, o.res.Truncated,
					shorten(tt.wantStdout, 40), tt.wantStderr, tt.wantCode, tt.wantTruncated)
			}
			gotOut, writes := tt.stdout.got()
			switch {
			case tt.once && writes != 1:
				t.Errorf("the failing tap got %d writes, want 1", writes)
			case tt.shared:
				if tt.stdout.overlap.Load() || len(gotOut) != len(tt.wantStdout)+len(tt.wantStderr) {
					t.Errorf("the shared tap got %q (overlapping writes: %v), want both streams, one write at a time", gotOut, tt.stdout.overlap.Load())
				}
			case !tt.once && gotOut != tt.wantTapOut:
				t.Errorf("stdout tap got %q, want %q", shorten(gotOut, 40), shorten(tt.wantTapOut, 40))
			}
			if tt.stderr != nil {
				if gotErr, _ := tt.stderr.got(); gotErr != tt.wantTapErr {
					t.Errorf("stderr tap got %q, want %q", gotErr, tt.wantTapErr)
				}
			}
		})
	}
}

// After a cancel, Exec returns as it did without taps, and the taps get
// nothing more, though the command was printing to the end.
func TestExecTapCancel(t *testing.T) {
	h := startHosts(t, 1)[0]
	c := dialHost(t, h, fastOptions())
	tap := newTapRecorder()
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		res, err := c.Exec(ctx, "yes", ExecOptions{Stdout: tap, Stderr: tap})
		tap.returned.Store(true)
		if len(res.Stdout) != 0 {
			err = errors.Join(err, errors.New("a cancelled Exec returned output"))
		}
		done <- err
	}()
	<-tap.first
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Exec = %v, want the cancellation", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Exec did not return after the cancel")
	}
	time.Sleep(200 * time.Millisecond)
	if n := tap.late.Load(); n != 0 {
		t.Errorf("the tap got %d writes after Exec returned", n)
	}
}
