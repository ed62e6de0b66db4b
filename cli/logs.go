package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/spf13/cobra"

	"github.com/zdnscloud/singlecloud/internal/wait"
)

// frame is one frame of the zkelog websocket (server/zkelog.go).
type frame struct {
	Seq     uint64    `json:"seq"`
	Type    string    `json:"type"`
	Time    time.Time `json:"time"`
	Level   string    `json:"level,omitempty"`
	Step    string    `json:"step,omitempty"`
	Node    string    `json:"node,omitempty"`
	Message string    `json:"message,omitempty"`
	Index   int       `json:"index,omitempty"`
	Total   int       `json:"total,omitempty"`
	Percent int       `json:"percent,omitempty"`
	ETA     *int      `json:"eta,omitempty"`
	Skipped bool      `json:"skipped,omitempty"`
	Status  string    `json:"status,omitempty"`
}

// failed reports whether a result frame says the operation did not
// succeed (failed: error; cancelled: warn).
func (f frame) failed() bool { return f.Type == "result" && f.Level != "" }

// Bounds of following: how long the backlog may pause before a read
// without -f counts as complete, and how long reconnecting may keep
// fail to bring a new frame (dials failing, or connections dropping before
// one) before logs -f gives up; a retry waits retryFirst, doubling up to
// retryMax.
const (
	backlogQuiet   = 700 * time.Millisecond
	reconnectLimit = 2 * time.Minute
	retryFirst     = 250 * time.Millisecond
	retryMax       = 5 * time.Second
)

func (a *app) clusterLogsCmd() *cobra.Command {
	var (
		follow     bool
		since      uint64
		noProgress bool
	)
	cmd := &cobra.Command{
		Use:   "logs NAME [-f]",
		Short: "Show the log of the cluster's current or last operation; -f follows it to its end",
		Long: `Show the log of the cluster's current or last operation (zkelog). With -f,
follow it until the operation ends, with a live progress bar on a terminal
(step k/N, percent, ETA, node); a dropped connection is resumed where it
stopped. The exit code is 1 when the operation failed or was cancelled, and
the error and what to do about it are printed.`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			return a.followLog(cmd.Context(), c, args[0], since, follow, follow && !noProgress && isTerminal(a.Out))
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the log until the operation ends")
	cmd.Flags().Uint64Var(&since, "since", 0, "only the frames after this seq number")
	cmd.Flags().BoolVar(&noProgress, "no-progress", false, "print progress frames as lines instead of a bar")
	return cmd
}

// followLog prints the cluster's operation log from since: without
// follow the frames the server has (it sends them at once), with follow
// until the result frame, reconnecting with ?since= when the connection
// drops or the server says the client fell behind.
func (a *app) followLog(ctx context.Context, c *client, name string, since uint64, follow, bar bool) error {
	var p *progress
	if bar {
		p = newProgress(a.Out)
		defer p.finish()
	}
	limit := a.retryLimit
	if limit <= 0 {
		limit = reconnectLimit
	}
	var (
		result     *frame
		failingFor time.Time // since when no new frame came; zero: one just did
		backoff    = retryFirst
	)
	for {
		before := since
		q := url.Values{}
		if since > 0 {
			q.Set("since", strconv.FormatUint(since, 10))
		}
		conn, err := c.dial(ctx, "/clusters/"+url.PathEscape(name)+"/zkelog", q)
		if err != nil {
			var ae *APIError
			if errors.As(err, &ae) || !follow || ctx.Err() != nil {
				return err
			}
		} else {
			stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
			err = a.readLog(conn, follow, p, &since, &result)
			stop()
			closeConn(conn)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case result != nil:
				return resultError(name, *result)
			case err == nil && since == 0:
				// Not one frame: an operation that writes no log.
				return a.outcomeWithoutLog(ctx, c, name, follow, p)
			case err == nil:
				return nil // the backlog without -f, or no operation to follow
			case !follow:
				return err
			}
			if since > before {
				// A new frame: the stream works, its drop starts afresh.
				failingFor, backoff = time.Time{}, retryFirst
			}
		}
		// A failed dial and a drop alike: the stream did not get on, so
		// retry with backoff until limit passes without a new frame.
		if failingFor.IsZero() {
			failingFor = time.Now()
		} else if time.Since(failingFor) > limit {
			return fmt.Errorf("the log stream could not be resumed for %s: %w", limit, err)
		}
		if conn == nil {
			a.note(p, fmt.Sprintf("reconnecting (%v)...", err))
		} else {
			a.note(p, fmt.Sprintf("the log stream dropped (%v); resuming after frame %d", err, since))
		}
		if !wait.Sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, retryMax)
	}
}

// readLog reads frames from conn until the server closes it (nil: the
// operation finished, or a normal close), a result frame, or an error to
// reconnect on; without follow it also stops once the backlog pauses.
func (a *app) readLog(conn *websocket.Conn, follow bool, p *progress, since *uint64, result **frame) error {
	for {
		if !follow {
			_ = conn.SetReadDeadline(time.Now().Add(backlogQuiet))
		}
		var f frame
		err := readFrame(conn, &f)
		if !follow {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil
			}
		}
		if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
			return nil
		}
		if err != nil {
			return err
		}
		if f.Seq <= *since && *since > 0 {
			continue // a frame seen before a reconnect
		}
		*since = f.Seq
		switch {
		case f.Type == "progress" && p != nil:
			p.update(f)
		default:
			a.note(p, frameLine(f))
		}
		if f.Type == "result" {
			*result = &f
			return nil
		}
	}
}

// note prints a line, above the bar when there is one, escaped
// (printable): the lines it prints carry what the server sent (frames, a
// stream's close reason).
func (a *app) note(p *progress, s string) {
	s = printable(s)
	if p != nil {
		p.line(s)
		return
	}
	fmt.Fprintln(a.Out, s)
}

// frameLine renders a frame as one line: time, level or kind, step, node,
// message, as the server's ?format=text does.
func frameLine(f frame) string {
	var b strings.Builder
	b.WriteString(f.Time.Local().Format("15:04:05"))
	level := f.Level
	if f.Type != "log" || level == "" {
		level = f.Type
		if f.Type == "log" {
			level = "info"
		}
	}
	b.WriteString(" " + strings.ToUpper(level))
	if f.Step != "" {
		b.WriteString(" [" + f.Step + "]")
	}
	if f.Node != "" {
		b.WriteString(" " + f.Node + ":")
	}
	switch f.Type {
	case "progress":
		fmt.Fprintf(&b, " step %d/%d, %d%%", f.Index, f.Total, f.Percent)
		if f.Skipped {
			b.WriteString(" (verified, skipped)")
		}
	case "result":
		if f.Status != "" {
			b.WriteString(" cluster is " + f.Status)
			if f.Message != "" {
				b.WriteString(":")
			}
		}
	}
	if f.Message != "" {
		b.WriteString(" " + strings.Join(strings.Fields(f.Message), " "))
	}
	return printable(b.String())
}

// resultError is nil for a result frame of a success, else the exit
// error saying what failed and what to do.
func resultError(name string, f frame) error {
	if !f.failed() {
		return nil
	}
	var where []string
	if f.Step != "" {
		where = append(where, "at step "+f.Step)
	}
	if f.Node != "" {
		where = append(where, "on node "+f.Node)
	}
	what := "failed"
	hint := fmt.Sprintf("hint: fix what the error says, then resume with 'singlecloud cluster retry %s' (or delete it with 'singlecloud cluster delete %s')", name, name)
	if f.Level == "warn" {
		what = "was cancelled"
		hint = fmt.Sprintf("hint: resume it with 'singlecloud cluster retry %s'", name)
	}
	msg := fmt.Sprintf("the operation on cluster %s %s", name, what)
	if len(where) > 0 {
		msg += " " + strings.Join(where, " ")
	}
	// A message joining several errors keeps a line for each, indented.
	lines := strings.Split(strings.TrimSpace(f.Message), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	msg += ": " + strings.Join(lines, "\n  ")
	if f.Status != "" {
		msg += " (cluster is " + f.Status + ")"
	}
	return &exitError{code: ExitError, msg: msg + "\n" + hint}
}
