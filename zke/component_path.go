package zke

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/zke/runtime"
)

// crashLoopRestarts is how many restarts by Docker during one wait make a
// component crash-looping: Docker's restart backoff (100 ms doubling)
// packs this many into a few seconds, a component that came up never
// restarts, and waiting out the whole timeout would only hide the cause.
const crashLoopRestarts = 5

// pathLink is one component on the way to what a step waits for, in the
// order they depend on each other (kubelet before kube-proxy: kube-proxy
// is healthy only once the kubelet has registered its Node).
type pathLink struct {
	// container is zke's container of the component on the node.
	container string
	// what names the probe in errors ("kubelet /healthz").
	what string
	// probe answers whether the component serves; nil when running is
	// all that can be checked.
	probe func(ctx context.Context) (bool, error)
}

// ComponentDownError is the first component on a waited-for path that is
// not running: what a step reports instead of the symptom further down.
type ComponentDownError struct {
	Node, Component string
	// State is Docker's description: "restarting", "exited (code 1)",
	// "keeps restarting".
	State    string
	Restarts int
	// LastError is the component's last log line that reads as an
	// error, or its last line.
	LastError string
}

func (e *ComponentDownError) Error() string {
	s := fmt.Sprintf("%s on %s is not running (%s, %d restarts)", e.Component, e.Node, e.State, e.Restarts)
	if e.LastError != "" {
		s += ": last error: " + e.LastError
	}
	return s
}

// waitPath waits up to timeout until the last link's probe succeeds. Each
// time it does not, the links are checked in order and the first that is
// not running (or not serving) is remembered; a crash-looping container
// ends the wait at once. The error names that first component, with its
// last error line, rather than the probe of the last link, as the last
// check that ran to its end found them: a check the timeout interrupted
// only reports that its own calls were cut.
func (r *run) waitPath(ctx context.Context, rep waitReporter, n node, timeout time.Duration, goal string, links []pathLink) error {
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	base := map[string]int{}
	for _, l := range links {
		if info, err := d.Inspect(ctx, l.container); err == nil {
			base[l.container] = info.RestartCount
		}
	}
	var first error
	target := links[len(links)-1]
	on := waitOn{rep: rep, node: n.Name, hint: func(err error) string {
		var down *ComponentDownError
		if errors.As(err, &down) {
			return r.downHint(n, down)
		}
		return ""
	}}
	err = poll(ctx, on, timeout, goal, func(ctx context.Context) (bool, error) {
		ok, perr := target.probe(ctx)
		if ok {
			return true, nil
		}
		if ctx.Err() != nil {
			// The wait's end cut this check short: what the last whole
			// check found stands, not "docker did not answer in time".
			return false, nil
		}
		found := r.firstDown(ctx, d, n, links, base)
		if ctx.Err() != nil {
			return false, nil
		}
		first = found
		if first == nil {
			return false, fmt.Errorf("%s: %w", target.what, perr)
		}
		var down *ComponentDownError
		if errors.As(first, &down) && down.State == stateCrashLoop {
			return false, stopPolling(first)
		}
		return false, first
	})
	if err == nil || first == nil || ctx.Err() != nil {
		return err
	}
	var down *ComponentDownError
	if errors.As(err, &down) && down.State == stateCrashLoop {
		return fmt.Errorf("%w (%s waits for it)", first, goal)
	}
	return fmt.Errorf("%w (waited %s for %s)", first, timeout, goal)
}

// stateCrashLoop is ComponentDownError.State of a container that Docker
// restarted crashLoopRestarts times during one wait.
const stateCrashLoop = "crash-looping"

// firstDown returns the first link that is not running or, before the
// last, does not pass its probe; nil when all run and serve.
func (r *run) firstDown(ctx context.Context, d *runtime.Docker, n node, links []pathLink, base map[string]int) error {
	for i, l := range links {
		info, err := d.Inspect(ctx, l.container)
		if errors.Is(err, runtime.ErrNotFound) {
			return &ComponentDownError{Node: n.Name, Component: l.container, State: "container missing"}
		}
		if err != nil {
			return fmt.Errorf("inspect %s on %s: %w", l.container, n.Name, err)
		}
		if state := containerTrouble(info, base[l.container]); state != "" {
			return &ComponentDownError{Node: n.Name, Component: l.container, State: state, Restarts: info.RestartCount,
				LastError: r.lastErrorLine(ctx, d, l.container)}
		}
		if i < len(links)-1 && l.probe != nil {
			if ok, err := l.probe(ctx); !ok {
				return fmt.Errorf("%s on %s: %w", l.what, n.Name, err)
			}
		}
	}
	return nil
}

// containerTrouble says what is wrong with a container that should run:
// "" when it runs and has not restarted crashLoopRestarts times since
// the wait began (base restarts).
func containerTrouble(info runtime.ContainerInfo, base int) string {
	if info.RestartCount-base >= crashLoopRestarts {
		return stateCrashLoop
	}
	switch info.Status {
	case "running":
		return ""
	case "exited", "dead":
		return fmt.Sprintf("%s with code %d", info.Status, info.ExitCode)
	case "":
		return "state unknown"
	default:
		return info.Status
	}
}

// lastErrorLine returns the last line of the container's log that reads
// as an error ("" when the log cannot be read).
func (r *run) lastErrorLine(ctx context.Context, d *runtime.Docker, name string) string {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	logs, err := d.ContainerLogs(lctx, name, 50)
	if err != nil {
		return ""
	}
	return errorLine(string(logs))
}

// maxErrorLine bounds a quoted log line.
const maxErrorLine = 600

// errorLine picks the last line of logs that reads as an error: the last
// klog E or F line ("E0512 10:00:00.000000 1 run.go:72] ..."), else the
// last saying error or failed (a usage text after a klog error may say
// either), else the last non-empty line.
func errorLine(logs string) string {
	var last, lastWord, lastKlog string
	for _, ln := range strings.Split(logs, "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" {
			continue
		}
		last = ln
		lower := strings.ToLower(ln)
		switch {
		case isKlogError(ln):
			lastKlog = ln
		case strings.Contains(lower, "error") || strings.Contains(lower, "failed"):
			lastWord = ln
		}
	}
	lastErr := lastKlog
	if lastErr == "" {
		lastErr = lastWord
	}
	if lastErr == "" {
		lastErr = last
	}
	if len(lastErr) > maxErrorLine {
		lastErr = lastErr[:maxErrorLine] + "…"
	}
	return lastErr
}

// isKlogError reports whether ln starts like a klog error or fatal line:
// E or F, then four digits (month and day).
func isKlogError(ln string) bool {
	if len(ln) < 5 || (ln[0] != 'E' && ln[0] != 'F') {
		return false
	}
	for _, c := range ln[1:5] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// pathErr is the node error of a failed waitPath: a component that does
// not run gets downHint; otherwise the end of the log of target, whose
// probe failed, says why.
func (r *run) pathErr(ctx context.Context, n node, err error, target string) error {
	var down *ComponentDownError
	if errors.As(err, &down) {
		return nodeErr(n, err, r.downHint(n, down))
	}
	return nodeErr(n, err, r.containerLogsHint(ctx, n, target))
}
