package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// step is one thing a scripted host does: write data to its stdout
// (stream 0) or stderr (stream 1), or end with err.
type step struct {
	host   string
	stream int
	data   string
	end    bool
	err    error
}

// scriptedExecutor is a double for the SSH executor that lets a test
// decide when each host writes and ends: each host's ExecStream takes its
// steps one by one and acknowledges each once done, so that the order of
// the chunks is the order of the steps. Its result is the transport's:
// the output capped as the transport caps it (stdout's first 64 KiB,
// stderr's last), none when the context ends.
type scriptedExecutor struct {
	steps map[string]chan step
	acks  chan struct{}
	// m is the manager running the commands (newStreamManager sets it):
	// an end step is done once the manager has published the host's end.
	m *Manager
}

func newScripted(hosts ...string) *scriptedExecutor {
	e := &scriptedExecutor{steps: map[string]chan step{}, acks: make(chan struct{})}
	for _, h := range hosts {
		e.steps[h] = make(chan step)
	}
	return e
}

func (e *scriptedExecutor) Exec(context.Context, Target, string) (transport.ExecResult, error) {
	return transport.ExecResult{}, errors.New("the scripted executor only streams")
}

func (e *scriptedExecutor) ExecStream(ctx context.Context, t Target, _ string, stdout, stderr io.Writer) (transport.ExecResult, error) {
	w := [2]io.Writer{stdout, stderr}
	kept := [2]keptOutput{{}, {tail: true}}
	for {
		select {
		case <-ctx.Done():
			return transport.ExecResult{}, &transport.NodeError{Node: t.Name, Op: "exec", Err: ctx.Err()}
		case s := <-e.steps[t.Name]:
			if !s.end {
				w[s.stream].Write([]byte(s.data))
				kept[s.stream].write([]byte(s.data))
			}
			e.acks <- struct{}{}
			if !s.end {
				continue
			}
			out, _ := kept[0].kept()
			errOut, _ := kept[1].kept()
			return transport.ExecResult{Stdout: out, Stderr: errOut,
				Truncated: kept[0].total > int64(len(out)) || kept[1].total > int64(len(errOut))}, s.err
		}
	}
}

// do has its host take s and waits until it has.
func (e *scriptedExecutor) do(t *testing.T, s step) {
	t.Helper()
	select {
	case e.steps[s.host] <- s:
	case <-time.After(5 * time.Second):
		t.Fatalf("host %s did not take step %+v", s.host, s)
	}
	<-e.acks
	for deadline := time.Now().Add(5 * time.Second); s.end && e.m != nil && running(e.m, s.host); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("host %s ended, but the manager did not publish its end", s.host)
		}
	}
}

// running reports whether a running command of m has yet to publish
// host's end: ExecStream has returned, but execHost has not finished it.
func running(m *Manager, host string) bool {
	m.feeds.mu.Lock()
	defer m.feeds.mu.Unlock()
	pending := false
	for _, f := range m.feeds.byID {
		f.mu.Lock()
		pending = pending || (f.hosts[host] != nil && f.hosts[host].done == nil)
		f.mu.Unlock()
	}
	return pending
}

// newStreamManager registers hosts (label group=t) with a manager running
// commands through exec; the manager's commands end with the test.
func newStreamManager(t *testing.T, exec Executor, hosts ...string) *Manager {
	t.Helper()
	store := storagetest.Open(t)
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: &fakeProber{}, Executor: exec})
	if err != nil {
		t.Fatal(err)
	}
	if se, ok := exec.(*scriptedExecutor); ok {
		se.m = m
	}
	key := testKey(t)
	for i, h := range hosts {
		if _, err := m.Create(context.Background(), model.HostSpec{Name: h, Address: fmt.Sprintf("10.0.0.%d", i+1), SSHKey: key, Labels: map[string]string{"group": "t"}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		m.cancel()
		m.cmdWG.Wait()
	})
	return m
}

// next returns the next chunk of ch, and false once it is closed.
func next(t *testing.T, ch <-chan CommandChunk) (CommandChunk, bool) {
	t.Helper()
	select {
	case c, ok := <-ch:
		return c, ok
	case <-time.After(5 * time.Second):
		t.Fatal("no chunk and no close within 5 s")
		return CommandChunk{}, false
	}
}

// drain returns every chunk left on ch until it is closed.
func drain(t *testing.T, ch <-chan CommandChunk) []CommandChunk {
	t.Helper()
	var out []CommandChunk
	for {
		c, ok := next(t, ch)
		if !ok {
			return out
		}
		out = append(out, c)
	}
}

// finished returns command id's record once its feed is gone.
func finished(t *testing.T, m *Manager, id string) CommandRecord {
	t.Helper()
	m.cmdWG.Wait()
	rec, err := m.Command(id)
	if err != nil || rec.State != "Finished" {
		t.Fatalf("command %s: %+v, %v; want it Finished", id, rec, err)
	}
	if f := m.feed(id); f != nil {
		t.Errorf("the feed of finished command %s is still kept", id)
	}
	return rec
}

// A follower from the start gets each host's output in the order it was
// written, cut at character boundaries, with its offsets, then one done
// marker per host with its exit code or error; its channel closes once
// the record, as it always was, is stored.
func TestFollowCommand(t *testing.T) {
	exit3 := &transport.NodeError{Node: "h1", Op: "exec", Err: &transport.ExitError{Code: 3}}
	refused := &transport.NodeError{Node: "h1", Op: "connect", Err: errors.New("connection refused")}
	out := func(host string, stream int, data string, offset int64) CommandChunk {
		return CommandChunk{Host: host, Stream: streamNames[stream], Data: data, Offset: offset}
	}
	for _, tc := range []struct {
		name    string
		hosts   []string
		steps   []step
		want    []CommandChunk
		results []CommandResult
	}{{
		name:    "output then done",
		hosts:   []string{"h1"},
		steps:   []step{{host: "h1", data: "one\n"}, {host: "h1", stream: 1, data: "careful\n"}, {host: "h1", data: "two\n"}, {host: "h1", end: true}},
		want:    []CommandChunk{out("h1", 0, "one\n", 0), out("h1", 1, "careful\n", 0), out("h1", 0, "two\n", 4), {Host: "h1", Done: true}},
		results: []CommandResult{{Host: "h1", Stdout: "one\ntwo\n", Stderr: "careful\n"}},
	}, {
		name:    "exit status",
		hosts:   []string{"h1"},
		steps:   []step{{host: "h1", stream: 1, data: "no"}, {host: "h1", end: true, err: exit3}},
		want:    []CommandChunk{out("h1", 1, "no", 0), {Host: "h1", Done: true, ExitCode: 3}},
		results: []CommandResult{{Host: "h1", ExitCode: 3, Stderr: "no"}},
	}, {
		name:    "unreachable",
		hosts:   []string{"h1"},
		steps:   []step{{host: "h1", end: true, err: refused}},
		want:    []CommandChunk{{Host: "h1", Done: true, ExitCode: -1, Error: refused.Error()}},
		results: []CommandResult{{Host: "h1", ExitCode: -1, Error: refused.Error()}},
	}, {
		name:    "a character split across writes",
		hosts:   []string{"h1"},
		steps:   []step{{host: "h1", data: "caf\xc3"}, {host: "h1", data: "\xa9 \xe2\x82"}, {host: "h1", data: "\xac!"}, {host: "h1", end: true}},
		want:    []CommandChunk{out("h1", 0, "caf", 0), out("h1", 0, "é ", 3), out("h1", 0, "€!", 6), {Host: "h1", Done: true}},
		results: []CommandResult{{Host: "h1", Stdout: "café €!"}},
	}, {
		name:  "an incomplete character at the end, and bytes that are not UTF-8",
		hosts: []string{"h1"},
		steps: []step{{host: "h1", data: "\xff\xfex\xe2\x82"}, {host: "h1", end: true}},
		want:  []CommandChunk{out("h1", 0, "\xff\xfex", 0), out("h1", 0, "\xe2\x82", 3), {Host: "h1", Done: true}},
		// The record is stored as JSON, which replaces each byte that is
		// not UTF-8, as it always did.
		results: []CommandResult{{Host: "h1", Stdout: "\ufffd\ufffdx\ufffd\ufffd"}},
	}, {
		name:    "two hosts interleaved",
		hosts:   []string{"h1", "h2"},
		steps:   []step{{host: "h1", data: "a"}, {host: "h2", data: "b"}, {host: "h1", end: true}, {host: "h2", data: "c"}, {host: "h2", end: true, err: exit3}},
		want:    []CommandChunk{out("h1", 0, "a", 0), out("h2", 0, "b", 0), {Host: "h1", Done: true}, out("h2", 0, "c", 1), {Host: "h2", Done: true, ExitCode: 3}},
		results: []CommandResult{{Host: "h1", Stdout: "a"}, {Host: "h2", Stdout: "bc", ExitCode: 3}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			exec := newScripted(tc.hosts...)
			m := newStreamManager(t, exec, tc.hosts...)
			rec, err := m.RunCommand(context.Background(), "alice", "", "group=t", CommandRequest{Command: []string{"true"}})
			if err != nil {
				t.Fatal(err)
			}
			so, ch, stop, err := m.FollowCommand(rec.ID)
			if err != nil || so.State != "Running" || so.ID != rec.ID || so.Results != nil {
				t.Fatalf("FollowCommand = %+v, %v; want the record, Running", so, err)
			}
			defer stop()
			for _, s := range tc.steps {
				exec.do(t, s)
			}
			if got := drain(t, ch); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("chunks:\n got %+v\nwant %+v", got, tc.want)
			}
			// The channel closed after the record was stored.
			done, err := m.Command(rec.ID)
			if err != nil || done.State != "Finished" {
				t.Fatalf("record after the channel closed: %+v, %v", done, err)
			}
			for i := range done.Results {
				done.Results[i].DurationSeconds = 0
			}
			if !reflect.DeepEqual(done.Results, tc.results) {
				t.Errorf("results:\n got %+v\nwant %+v", done.Results, tc.results)
			}
			finished(t, m, rec.ID)
		})
	}
}

// A follower that joins late first gets what each host printed so far
// (one chunk per stream) and the done markers of the hosts that have
// finished; stop closes its channel at once without disturbing the
// command or the others; following a finished command gives its record
// and a closed channel; an unknown one is an error.
func TestFollowCommandLateStopAndFinished(t *testing.T) {
	exec := newScripted("h1", "h2")
	m := newStreamManager(t, exec, "h1", "h2")
	rec, err := m.RunCommand(context.Background(), "alice", "", "group=t", CommandRequest{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	_, early, stopEarly, err := m.FollowCommand(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []step{{host: "h1", data: "one\n"}, {host: "h1", stream: 1, data: "e1"}, {host: "h1", data: "more\n"}, {host: "h2", data: "x"}, {host: "h2", end: true}} {
		exec.do(t, s)
	}
	_, late, stopLate, err := m.FollowCommand(rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer stopLate()
	want := []CommandChunk{
		{Host: "h1", Stream: "stdout", Data: "one\nmore\n"}, {Host: "h1", Stream: "stderr", Data: "e1"},
		{Host: "h2", Stream: "stdout", Data: "x"}, {Host: "h2", Done: true},
	}
	for i, w := range want {
		if c, ok := next(t, late); !ok || c != w {
			t.Fatalf("catch-up chunk %d: %+v (open %v), want %+v", i, c, ok, w)
		}
	}
	stopEarly()
	stopEarly()
	if got := drain(t, early); len(got) != 5 {
		t.Errorf("the early follower, stopped, holds %d chunks, want the 5 sent before", len(got))
	}
	exec.do(t, step{host: "h1", data: "two\n"})
	exec.do(t, step{host: "h1", end: true})
	if got, want := drain(t, late), []CommandChunk{{Host: "h1", Stream: "stdout", Data: "two\n", Offset: 9}, {Host: "h1", Done: true}}; !reflect.DeepEqual(got, want) {
		t.Errorf("live chunks after the catch-up: %+v, want %+v", got, want)
	}
	finished(t, m, rec.ID)

	after, ch, stop, err := m.FollowCommand(rec.ID)
	if err != nil || after.State != "Finished" || len(after.Results) != 2 {
		t.Fatalf("following a finished command: %+v, %v", after, err)
	}
	if c, ok := <-ch; ok {
		t.Errorf("the channel of a finished command carries %+v, want it closed", c)
	}
	stop()
	if _, _, _, err := m.FollowCommand("nope"); !errors.Is(err, ErrCommandNotFound) {
		t.Errorf("following an unknown command: %v, want ErrCommandNotFound", err)
	}
}

// A follower that stops reading never holds the command up: once its
// buffer is full it gets the dropped marker and its channel is closed,
// while a follower that keeps up gets everything and the record keeps the
// first 64 KiB.
func TestFollowCommandOverflow(t *testing.T) {
	exec := newScripted("h1")
	m := newStreamManager(t, exec, "h1")
	rec, err := m.RunCommand(context.Background(), "alice", "h1", "", CommandRequest{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	_, stalled, stop1, _ := m.FollowCommand(rec.ID)
	defer stop1()
	_, reader, stop2, _ := m.FollowCommand(rec.ID)
	defer stop2()
	line := strings.Repeat("x", 1023) + "\n"
	const writes = 2 * followBuffer
	for i := range writes {
		exec.do(t, step{host: "h1", data: line})
		if c, ok := next(t, reader); !ok || c.Offset != int64(i*len(line)) {
			t.Fatalf("the reading follower's chunk %d: %+v (open %v)", i, c.Offset, ok)
		}
	}
	exec.do(t, step{host: "h1", end: true})
	if c, ok := next(t, reader); !ok || !c.Done {
		t.Errorf("the reading follower's last chunk: %+v, want the done marker", c)
	}
	got := drain(t, stalled)
	if len(got) != followBuffer || !got[len(got)-1].Dropped || got[len(got)-1].Error == "" || got[len(got)-2].Offset != int64((followBuffer-2)*len(line)) {
		t.Errorf("the stalled follower got %d chunks ending %+v, want %d: the first outputs, then the dropped marker", len(got), got[len(got)-1], followBuffer)
	}
	r := finished(t, m, rec.ID).Results[0]
	marker := "\n" + truncatedMarker("first", "stdout", maxOutputBytes) + "\n"
	if len(r.Stdout) != maxOutputBytes+len(marker) || !r.Truncated || r.Stdout[:len(line)] != line || !strings.HasSuffix(r.Stdout, marker) {
		t.Errorf("record: %d bytes of stdout, truncated %v; want the first %d and the marker", len(r.Stdout), r.Truncated, maxOutputBytes)
	}
}

// When the manager stops, the running hosts end with their error, the
// followers get the done markers and their channels close, the record
// keeps no output of a cut command (as the transport's Exec), and
// nothing of the command is left.
func TestFollowCommandManagerStops(t *testing.T) {
	exec := newScripted("h1")
	m := newStreamManager(t, exec, "h1")
	rec, err := m.RunCommand(context.Background(), "alice", "h1", "", CommandRequest{Command: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}
	_, ch, stop, _ := m.FollowCommand(rec.ID)
	defer stop()
	exec.do(t, step{host: "h1", data: "partial"})
	m.cancel()
	got := drain(t, ch)
	if len(got) != 2 || got[0].Data != "partial" || !got[1].Done || got[1].ExitCode != -1 || !strings.Contains(got[1].Error, "context canceled") {
		t.Errorf("chunks: %+v, want the output, then the done marker with the cancellation", got)
	}
	if r := finished(t, m, rec.ID).Results[0]; r.Stdout != "" || r.ExitCode != -1 || r.Error == "" {
		t.Errorf("record of the cut command: %+v", r)
	}
	m.feeds.mu.Lock()
	defer m.feeds.mu.Unlock()
	if len(m.feeds.byID) != 0 {
		t.Error("the manager still has feeds after its commands ended")
	}
}

// What a follower that joins late is replayed, and the record: stdout's
// first 64 KiB, stderr's last, each with where it starts in the stream.
func TestKeptOutput(t *testing.T) {
	big := strings.Repeat("a", maxOutputBytes) + strings.Repeat("b", maxOutputBytes+10)
	for _, tc := range []struct {
		name      string
		tail      bool
		writes    []string
		want      string
		offset    int64
		truncated bool
	}{
		{"head, within the cap", false, []string{"ab", "c"}, "abc", 0, false},
		{"head, beyond the cap", false, []string{big[:10], big[10:]}, big[:maxOutputBytes], 0, true},
		{"tail, within the cap", true, []string{"ab", "c"}, "abc", 0, false},
		{"tail, one big write", true, []string{big}, big[len(big)-maxOutputBytes:], int64(len(big) - maxOutputBytes), true},
		{"tail, many small writes", true, strings.SplitAfter(big, "a"), big[len(big)-maxOutputBytes:], int64(len(big) - maxOutputBytes), true},
	} {
		k := keptOutput{tail: tc.tail}
		for _, w := range tc.writes {
			k.write([]byte(w))
		}
		got, offset := k.kept()
		truncated := k.total > int64(len(got))
		if string(got) != tc.want || offset != tc.offset || truncated != tc.truncated {
			t.Errorf("%s: kept %d bytes at %d (truncated %v), want %d at %d (%v)", tc.name, len(got), offset, truncated, len(tc.want), tc.offset, tc.truncated)
		}
	}
}
