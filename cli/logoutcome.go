package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/zdnscloud/singlecloud/internal/wait"
)

// outcomeWithoutLog ends `cluster logs` for an operation that writes no
// log (the connection of an imported cluster): the log stream closes at
// once with nothing in it. The operation's outcome is read from the
// cluster instead, with -f once it has ended (the cluster is read every
// pollInterval meanwhile), and printed as its result line; the exit error
// is the same as for a logged operation's result.
func (a *app) outcomeWithoutLog(ctx context.Context, c *client, name string, follow bool, p *progress) error {
	every := a.pollInterval
	if every <= 0 {
		every = 2 * time.Second
	}
	for {
		var cl struct {
			Status        string `json:"status"`
			LastOperation *struct {
				Type    string    `json:"type"`
				State   string    `json:"state"`
				EndedAt time.Time `json:"endedAt"`
				Error   *struct {
					Step    string `json:"step"`
					Node    string `json:"node"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"lastOperation"`
		}
		if err := c.do(ctx, http.MethodGet, "/clusters/"+url.PathEscape(name), nil, nil, &cl); err != nil {
			return err
		}
		op := cl.LastOperation
		switch {
		case op == nil, !unlogged(op.Type):
			return nil // nothing yet, or a logged operation whose first frame is still to come
		case op.State == "running" && !follow:
			a.note(p, fmt.Sprintf("the %s of cluster %s is running; it writes no log: follow it with -f", op.Type, name))
			return nil
		case op.State == "running":
			if !wait.Sleep(ctx, every) {
				return ctx.Err()
			}
			continue
		}
		f := frame{Type: "result", Time: op.EndedAt, Status: cl.Status, Message: op.Type + " " + op.State}
		switch op.State {
		case "failed":
			f.Level = "error"
		case "canceled", "cancelled":
			f.Level = "warn"
		}
		if op.Error != nil {
			f.Step, f.Node, f.Message = op.Error.Step, op.Error.Node, op.Error.Message
		}
		a.note(p, frameLine(f))
		return resultError(name, f)
	}
}

// unlogged reports whether operations of typ write no log: the connection
// of an imported cluster (server: the operation table's unlogged rows).
func unlogged(typ string) bool { return typ == "import" || typ == "connect" }
