package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/spf13/cobra"

	"github.com/zdnscloud/singlecloud/internal/wait"
)

// event is one lifecycle event of the events websocket (pubsub.Event).
type event struct {
	Type        string    `json:"type"`
	Cluster     string    `json:"cluster"`
	Status      string    `json:"status,omitempty"`
	From        string    `json:"from,omitempty"`
	Event       string    `json:"event,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Environment string    `json:"environment,omitempty"`
	Application string    `json:"application,omitempty"`
	Time        time.Time `json:"time"`
}

// eventStream is the events websocket, reconnected when it drops; a
// reconnect may miss events, which onReconnect is told about.
type eventStream struct {
	c    *client
	conn *websocket.Conn
}

// openEvents dials the events websocket: every user's, with the events of
// the clusters they may see (an error answer is returned as the API's).
func openEvents(ctx context.Context, c *client) (*eventStream, error) {
	conn, err := c.dial(ctx, "/events", nil)
	if err != nil {
		return nil, err
	}
	return &eventStream{c: c, conn: conn}, nil
}

// next returns the next event; on a dropped connection it reconnects
// (bounded) and calls reconnected, since events may have been missed.
func (s *eventStream) next(ctx context.Context, reconnected func()) (event, error) {
	for {
		var ev event
		stop := context.AfterFunc(ctx, func() { _ = s.conn.Close() })
		err := readFrame(s.conn, &ev)
		stop()
		if err == nil {
			return ev, nil
		}
		if ctx.Err() != nil {
			return event{}, ctx.Err()
		}
		closeConn(s.conn)
		deadline := time.Now().Add(reconnectLimit)
		for {
			if !wait.Sleep(ctx, time.Second) {
				return event{}, ctx.Err()
			}
			conn, derr := s.c.dial(ctx, "/events", nil)
			if derr == nil {
				s.conn = conn
				break
			}
			var ae *APIError
			if errors.As(derr, &ae) || time.Now().After(deadline) {
				return event{}, fmt.Errorf("the events stream dropped (%v) and could not be resumed: %w", err, derr)
			}
		}
		if reconnected != nil {
			reconnected()
		}
	}
}

func (s *eventStream) close() { closeConn(s.conn) }

func (a *app) eventsCmd() *cobra.Command {
	var (
		output  string
		follow  bool
		cluster string
	)
	cmd := &cobra.Command{
		Use:   "events [-f]",
		Short: "Print the lifecycle events of the clusters you may see as they happen",
		Long: `Print the lifecycle events (status changes, stalls, snapshots, certificate
warnings, application phases) as they happen, from the events websocket,
until interrupted. The server keeps no history: -f (the default) is the only
mode.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != outJSON && output != outTable {
				return usageErrorf("events -o takes table or json (one event per line)")
			}
			if !follow {
				return usageErrorf("events only follows (the server keeps no history of events)")
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			s, err := openEvents(cmd.Context(), c)
			if err != nil {
				return err
			}
			defer s.close()
			for {
				ev, err := s.next(cmd.Context(), func() { fmt.Fprintln(a.Err, "(reconnected: events in between may be missing)") })
				if errors.Is(err, context.Canceled) {
					return nil
				}
				if err != nil {
					return err
				}
				if cluster != "" && ev.Cluster != cluster {
					continue
				}
				if output == outJSON {
					b, _ := json.Marshal(ev)
					fmt.Fprintf(a.Out, "%s\n", b)
					continue
				}
				fmt.Fprintln(a.Out, eventLine(ev))
			}
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", true, "follow the events (the only mode)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "table (a line per event) or json (a JSON object per line)")
	cmd.Flags().StringVar(&cluster, "cluster", "", "only the events of this cluster")
	return cmd
}

// eventLine renders an event as one line.
func eventLine(ev event) string {
	parts := []string{ev.Time.Local().Format("15:04:05"), ev.Type}
	switch {
	case ev.Application != "":
		parts = append(parts, ev.Environment+"/"+ev.Application)
	case ev.Cluster != "":
		parts = append(parts, ev.Cluster)
	}
	if ev.Status != "" {
		s := ev.Status
		if ev.From != "" {
			s = ev.From + " -> " + ev.Status
		}
		parts = append(parts, s)
	}
	if ev.Reason != "" {
		parts = append(parts, strings.Join(strings.Fields(ev.Reason), " "))
	}
	return printable(strings.Join(parts, " "))
}

// watchList prints the whole list, then, after each burst of cluster
// events, what changed: changed is given the clusters the events named
// (sorted, once each) and prints them as they are now, as kubectl's
// --watch prints a line per change; a fleet of 10,000 clusters is not
// printed again for one status change. After the events stream was
// resumed (events in between may be lost) the whole list is printed
// again. It runs until interrupted.
func (a *app) watchList(ctx context.Context, c *client, list func() error, changed func(names []string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := openEvents(ctx, c)
	if err != nil {
		return err
	}
	if err := list(); err != nil {
		s.close()
		return err
	}
	// A change is a cluster's name, or "" for "list it all again".
	type change struct {
		cluster string
		err     error
	}
	changes := make(chan change, 64)
	send := func(ch change) {
		select {
		case changes <- ch:
		case <-ctx.Done():
		}
	}
	go func() { // owns s: closes it when ctx ends
		defer s.close()
		for {
			ev, err := s.next(ctx, func() { send(change{}) })
			if err != nil {
				send(change{err: err})
				return
			}
			if ev.Cluster != "" {
				send(change{cluster: ev.Cluster})
			}
		}
	}()
	for {
		var first change
		select {
		case <-ctx.Done():
			return nil
		case first = <-changes:
		}
		// A burst of events (an install's status changes) prints once.
		burst := []change{first}
		timer := time.NewTimer(200 * time.Millisecond)
	collect:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case ch := <-changes:
				burst = append(burst, ch)
			case <-timer.C:
				break collect
			}
		}
		relist, names := false, map[string]bool{}
		for _, ch := range burst {
			switch {
			case ch.err != nil:
				if ctx.Err() != nil {
					return nil
				}
				return ch.err
			case ch.cluster == "":
				relist = true
			default:
				names[ch.cluster] = true
			}
		}
		if relist {
			fmt.Fprintln(a.Out)
			if err := list(); err != nil {
				return err
			}
			continue
		}
		if err := changed(slices.Sorted(maps.Keys(names))); err != nil {
			return err
		}
	}
}

func (a *app) clusterWaitCmd() *cobra.Command {
	var (
		forCond string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "wait NAME --for=status=Running",
		Short: "Wait until a cluster has a status (or is deleted: --for=delete)",
		Long: `Wait until the cluster shows the status (--for=status=Running) or is gone
(--for=delete), re-reading it on each of its events (the admin's events
websocket; others, and the admin once the events stream is lost, poll every
2 s). Exit code 1 if the timeout passes first,
or if the cluster's operation failed while it does not have the status.`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			want, deleted, err := parseFor(forCond)
			if err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return a.waitCluster(ctx, c, args[0], want, deleted, timeout)
		},
	}
	cmd.Flags().StringVar(&forCond, "for", "status=Running", "status=STATUS or delete")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	return cmd
}

// waitCluster is the wait of `cluster wait`.
func (a *app) waitCluster(ctx context.Context, c *client, name, want string, deleted bool, timeout time.Duration) error {
	changes := make(chan struct{}, 1)
	notify := func() {
		select {
		case changes <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// fellBack is the events stream's last error, when it ends for good;
	// poll re-reads every pollInterval until ctx ends.
	fellBack := make(chan error)
	poll := func() {
		every := a.pollInterval
		if every == 0 {
			every = 2 * time.Second
		}
		for wait.Sleep(ctx, every) {
			notify()
		}
	}
	if s, err := openEvents(ctx, c); err == nil {
		go func() { // owns s: closes it when ctx ends
			defer s.close()
			for {
				ev, err := s.next(ctx, notify)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					// The events stream is gone for good (it could not
					// be resumed, or the token stopped working): poll,
					// never wait blind; the next read reports a 401.
					select { // the wait says so, and re-reads
					case fellBack <- err:
					case <-ctx.Done():
						return
					}
					poll()
					return
				}
				if ev.Cluster == name {
					notify()
				}
			}
		}()
	} else {
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
			return err
		}
		go poll() // not the admin: no events, so poll
	}
	last := ""
	for {
		obj, err := statusOf(ctx, c, name)
		var ae *APIError
		switch {
		case deleted && errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			fmt.Fprintf(a.Out, "cluster/%s deleted\n", name)
			return nil
		case err != nil && ctx.Err() == nil:
			return err
		case err == nil:
			last = str(obj["status"])
			if !deleted && last == want {
				fmt.Fprintf(a.Out, "cluster/%s %s\n", name, want)
				return nil
			}
			if op, _ := obj["lastOperation"].(map[string]any); !deleted && (str(op["state"]) == "failed" || str(op["state"]) == "canceled") {
				return &exitError{code: ExitError, msg: fmt.Sprintf("cluster %s is %s, not %s: its %s operation %s: %s\nhint: 'singlecloud cluster logs %s' shows why; 'singlecloud cluster retry %s' resumes it",
					name, last, want, str(op["type"]), str(op["state"]), field(op, "error", "message"), name, name)}
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &exitError{code: ExitError, msg: fmt.Sprintf("timed out after %s waiting for cluster %s (last seen %s)", timeout, name, orDash(last))}
			}
			return ctx.Err()
		case err := <-fellBack:
			fmt.Fprintf(a.Err, "(%s: polling the cluster instead)\n", printable(err.Error()))
		case <-changes:
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
