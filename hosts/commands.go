package hosts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// Bounds of a command: what it may be, how long it may run, what is kept.
const (
	maxArgs           = 64
	maxArgBytes       = 4096
	defaultCmdTimeout = 60 * time.Second
	maxCmdTimeout     = time.Hour
	// maxOutputBytes caps what is kept of each of stdout and stderr of
	// one host; a command on many hosts keeps less of each
	// (hostOutputShare, commandcaps.go).
	maxOutputBytes = 64 << 10
	// keptCommands is how many command records are kept at most, newest;
	// maxStoredCommandBytes (commandcaps.go) may keep fewer.
	keptCommands = 200
)

// ErrCommandNotFound reports an unknown command record.
var ErrCommandNotFound = errors.New("command not found")

// CommandRequest is what an admin asks to run: an argv, quoted word by
// word for the host's shell (never a string pasted into it).
type CommandRequest struct {
	Command        []string `json:"command"`
	TimeoutSeconds int      `json:"timeoutSeconds,omitempty"`
}

// CommandResult is one host's outcome of a command.
type CommandResult struct {
	Host     string `json:"host"`
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	// Truncated says that output beyond the cap was dropped.
	Truncated       bool    `json:"truncated,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
	// Error says why the command could not run or finish (unreachable,
	// timed out); ExitCode is then -1.
	Error string `json:"error,omitempty"`
}

// CommandRecord is one command run on one or more hosts: the audit of who
// ran what where, and each host's result. State is Running until every
// host has answered, then Finished; Interrupted when singlecloud stopped
// before (the hosts may or may not have run it).
type CommandRecord struct {
	ID         string          `json:"id"`
	Command    []string        `json:"command"`
	Selector   string          `json:"selector,omitempty"`
	Hosts      []string        `json:"hosts"`
	StartedBy  string          `json:"startedBy"`
	StartedAt  time.Time       `json:"startedAt"`
	FinishedAt *time.Time      `json:"finishedAt,omitempty"`
	State      string          `json:"state"`
	Results    []CommandResult `json:"results"`
	// Truncated says that some host's output was cut to what the record
	// keeps (each such result is Truncated and its output says so).
	Truncated bool `json:"truncated,omitempty"`
}

// Commands run on hosts through an Executor.
type Executor interface {
	Exec(ctx context.Context, t Target, cmd string) (transport.ExecResult, error)
}

// StreamExecutor is an Executor that hands over a command's output while
// it runs, so that RunCommand's followers see it as it comes. An Executor
// without it still works: its output reaches the followers when each host
// has finished.
type StreamExecutor interface {
	Executor
	// ExecStream runs cmd on t and returns what Exec returns; meanwhile
	// it writes the command's stdout and stderr to the writers as they
	// arrive (the transport's ExecOptions taps), in addition to the
	// result. The writers never block and never fail; ExecStream makes no
	// write after it returns.
	ExecStream(ctx context.Context, t Target, cmd string, stdout, stderr io.Writer) (transport.ExecResult, error)
}

// validCommand checks req and returns its timeout.
func validCommand(req CommandRequest) (time.Duration, error) {
	var errs validation.Errors
	switch {
	case len(req.Command) == 0:
		errs = append(errs, validation.FieldError{Field: "command", Reason: `is required: give the program and its arguments, like ["uname", "-a"]`})
	case len(req.Command) > maxArgs:
		errs = append(errs, validation.FieldError{Field: "command", Reason: fmt.Sprintf("has %d words, more than %d", len(req.Command), maxArgs)})
	}
	for i, a := range req.Command {
		if len(a) > maxArgBytes || strings.ContainsRune(a, 0) || (i == 0 && a == "") {
			errs = append(errs, validation.FieldError{Field: fmt.Sprintf("command[%d]", i), Reason: fmt.Sprintf("must be a non-empty word of at most %d bytes without NUL", maxArgBytes)})
		}
	}
	timeout := defaultCmdTimeout
	if req.TimeoutSeconds != 0 {
		timeout = time.Duration(req.TimeoutSeconds) * time.Second
		if timeout < time.Second || timeout > maxCmdTimeout {
			errs = append(errs, validation.FieldError{Field: "timeoutSeconds", Reason: fmt.Sprintf("%d is not between 1 and %d", req.TimeoutSeconds, int(maxCmdTimeout/time.Second))})
		}
	}
	if len(errs) > 0 {
		return 0, errs
	}
	return timeout, nil
}

// RunCommand starts req on the named host, or on every host selector (a
// Kubernetes label selector) matches when name is "", at most Workers at
// once, and returns its record, Running. It goes on after the request that
// started it; the record (GET) says how it ended, and FollowCommand hands
// out its output while it runs.
func (m *Manager) RunCommand(ctx context.Context, actor, name, selector string, req CommandRequest) (CommandRecord, error) {
	timeout, err := validCommand(req)
	if err != nil {
		return CommandRecord{}, err
	}
	if name != "" && selector != "" {
		return CommandRecord{}, validation.Errors{{Field: "selector", Reason: "a command on one host takes no selector; use POST /hosts/commands?selector=… for several"}}
	}
	if m.root.Err() != nil {
		return CommandRecord{}, errors.New("the host manager is stopping: run the command again once singlecloud is back")
	}
	targets, err := m.selectTargets(name, selector)
	if err != nil {
		return CommandRecord{}, err
	}
	rec := CommandRecord{ID: newCommandID(m.opts.Clock()), Command: slices.Clone(req.Command), Selector: selector,
		StartedBy: actor, StartedAt: m.opts.Clock().UTC(), State: "Running"}
	for _, t := range targets {
		rec.Hosts = append(rec.Hosts, t.Name)
	}
	// The feed first: a record with a feed is running, and no other
	// command's write drops it (pruneCommands).
	feed := newCommandFeed(rec.Hosts)
	m.setFeed(rec.ID, feed)
	if err := m.saveCommand(rec); err != nil {
		feed.close()
		m.setFeed(rec.ID, nil)
		return CommandRecord{}, err
	}
	m.log.Info("host command started", "id", rec.ID, "by", actor, "command", rec.Command, "hosts", rec.Hosts)
	m.cmdWG.Add(1)
	go func() {
		defer m.cmdWG.Done()
		m.runCommand(rec, targets, timeout, feed)
	}()
	return rec, nil
}

// runCommand runs rec on targets, stores the finished record (each host's
// output cut to its share, hostOutputShare), and then ends the command's
// feed, so that a follower whose channel closes finds the record
// finished.
func (m *Manager) runCommand(rec CommandRecord, targets []Target, timeout time.Duration, feed *commandFeed) {
	cmd := transport.ShellJoin(rec.Command)
	results := make([]CommandResult, len(targets))
	share := hostOutputShare(len(targets))
	sem := make(chan struct{}, m.opts.Probe.Workers)
	var wg sync.WaitGroup
	for i, t := range targets {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(m.root, timeout)
			defer cancel()
			results[i] = capResult(m.execHost(ctx, t, cmd, feed), share)
		}()
	}
	wg.Wait()
	now := m.opts.Clock().UTC()
	rec.Results, rec.FinishedAt, rec.State = results, &now, "Finished"
	rec.Truncated = slices.ContainsFunc(results, func(r CommandResult) bool { return r.Truncated })
	if err := m.saveCommand(rec); err != nil {
		m.log.Warn("host command record not stored", "id", rec.ID, "err", err)
	}
	feed.close()
	m.setFeed(rec.ID, nil)
	codes := make([]string, len(results))
	for i, r := range results {
		codes[i] = fmt.Sprintf("%s=%d", r.Host, r.ExitCode)
	}
	m.log.Info("host command finished", "id", rec.ID, "by", rec.StartedBy, "command", rec.Command, "exitCodes", strings.Join(codes, ","))
}

// execHost runs cmd on t and returns the host's result as the record
// keeps it: the executor's result, whether it streams or not (a command
// cut off by its timeout keeps no output, as with the transport's Exec;
// its followers saw what it printed). The output goes to feed as it comes
// when the executor streams it, else when the host has finished; the
// host's done marker follows it.
func (m *Manager) execHost(ctx context.Context, t Target, cmd string, feed *commandFeed) CommandResult {
	start := time.Now()
	var out transport.ExecResult
	var err error
	if se, ok := m.opts.Executor.(StreamExecutor); ok {
		out, err = se.ExecStream(ctx, t, cmd, feedWriter{feed, t.Name, 0}, feedWriter{feed, t.Name, 1})
	} else {
		out, err = m.opts.Executor.Exec(ctx, t, cmd)
		feed.output(t.Name, 0, out.Stdout)
		feed.output(t.Name, 1, out.Stderr)
	}
	r := CommandResult{Host: t.Name, DurationSeconds: time.Since(start).Seconds(),
		Stdout: string(out.Stdout), Stderr: string(out.Stderr), Truncated: out.Truncated}
	var exit *transport.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.ExitCode = exit.Code
	default:
		r.ExitCode, r.Error = -1, err.Error()
	}
	feed.finish(t.Name, r.ExitCode, r.Error)
	return r
}

// selectTargets returns the targets of a command: the named host, or every host
// selector matches (at least one).
func (m *Manager) selectTargets(name, selector string) ([]Target, error) {
	var names []string
	if name != "" {
		if _, err := m.Get(name); err != nil {
			return nil, err
		}
		names = []string{name}
	} else {
		sel, err := labels.Parse(selector)
		if err != nil || selector == "" {
			return nil, validation.Errors{{Field: "selector", Reason: fmt.Sprintf("%q is not a label selector like rack=a,env!=test", selector)}}
		}
		for _, h := range m.List() {
			if sel.Matches(labels.Set(h.Labels)) {
				names = append(names, h.Name)
			}
		}
		if len(names) == 0 {
			return nil, validation.Errors{{Field: "selector", Reason: fmt.Sprintf("%q matches no registered host", selector)}}
		}
	}
	var out []Target
	for _, n := range names {
		t, _, _, err := m.target(n)
		if err != nil {
			return nil, validation.Errors{{Field: "host", Reason: fmt.Sprintf("host %s: %v", n, err)}}
		}
		out = append(out, t)
	}
	return out, nil
}

// interruptCommands marks the records a crash left Running: nothing runs
// them any more.
func (m *Manager) interruptCommands() error {
	recs, err := m.Commands()
	if err != nil {
		return fmt.Errorf("hosts: load commands: %w", err)
	}
	for _, rec := range recs {
		if rec.State != "Running" {
			continue
		}
		now := m.opts.Clock().UTC()
		rec.State, rec.FinishedAt = "Interrupted", &now
		if err := m.saveCommand(rec); err != nil {
			return fmt.Errorf("hosts: command %s: %w", rec.ID, err)
		}
	}
	return nil
}

// Command returns one command record.
func (m *Manager) Command(id string) (CommandRecord, error) { return readCommand(m.opts.Store, id) }

// Commands returns the kept command records, newest first.
func (m *Manager) Commands() ([]CommandRecord, error) { return readCommands(m.opts.Store) }

// saveCommand stores rec and drops the oldest records beyond keptCommands
// or maxStoredCommandBytes, never rec nor a running command's
// (pruneCommands).
func (m *Manager) saveCommand(rec CommandRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return m.opts.Store.Update(func(tx storage.Tx) error {
		if err := tx.Put(storage.BucketHostCommands, rec.ID, data); err != nil {
			return err
		}
		return pruneCommands(tx, rec.ID, func(id string) bool { return m.feed(id) != nil }, keptCommands, maxStoredCommandBytes)
	})
}

// newCommandID is a time-ordered id: the start time and a random suffix.
func newCommandID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405.000") + "-" + hex.EncodeToString(b[:])
}
