package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// JobResult is the outcome of a one-shot container.
type JobResult struct {
	// Name is the job container's name.
	Name string
	// ExitCode is the container's exit code.
	ExitCode int
	// Logs are its stdout and stderr interleaved, at most the last 1 MiB;
	// LogsTruncated says whether more was written.
	Logs          []byte
	LogsTruncated bool

	node string
}

// Err returns an *ExitError when the job exited with a non-zero code.
func (r JobResult) Err() error {
	if r.ExitCode == 0 {
		return nil
	}
	return &ExitError{Name: r.Name, Node: r.node, Code: r.ExitCode, Logs: string(r.Logs)}
}

// RunJob runs spec as a one-shot container: create, start, wait for it to
// exit, read its logs, remove it. A non-zero exit code is not an error of
// RunJob (see JobResult.Err). The restart policy must be empty or "no";
// an empty Name gets a random zke-job-… name. A zke job container of the
// same name left by an earlier run is removed first, so two jobs of one
// name must not run at the same time on a node; any other container of
// that name is an error.
//
// The wait is bounded by ctx only. When ctx ends the container is killed
// and removed under a fresh context bounded by cleanupTimeout, and the
// error matches ctx.Err(). The container is removed in every case.
func (c *Docker) RunJob(ctx context.Context, spec ContainerSpec) (JobResult, error) {
	if spec.RestartPolicy != "" && spec.RestartPolicy != RestartNo {
		return JobResult{}, fmt.Errorf("%w: job %s: restart policy %q: a one-shot job must not restart", ErrInvalidSpec, spec.Name, spec.RestartPolicy)
	}
	if spec.Name == "" {
		var b [6]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
		spec.Name = "zke-job-" + hex.EncodeToString(b[:])
	}
	n, err := spec.normalized(c.cluster, RestartNo)
	if err != nil {
		return JobResult{}, err
	}
	if err := c.clearJob(ctx, n); err != nil {
		return JobResult{}, err
	}
	present, err := c.ImagePresent(ctx, n.Image)
	if err != nil {
		return JobResult{}, err
	}
	if !present {
		return JobResult{}, &ImageMissingError{Image: n.Image, Node: c.node}
	}
	id, err := c.create(ctx, n, specHash(n), true)
	if err != nil {
		return JobResult{}, err
	}
	defer c.cleanup(ctx, id, n.Name)
	if err := c.start(ctx, id, n.Name); err != nil {
		return JobResult{}, err
	}
	code, err := c.wait(ctx, id, n.Name)
	if err != nil {
		return JobResult{}, err
	}
	logs, truncated, err := c.logs(ctx, id, n.Name, 0, false)
	if err != nil {
		return JobResult{}, err
	}
	c.log.Debug("job finished", "container", n.Name, "exitCode", code)
	return JobResult{Name: n.Name, ExitCode: code, Logs: logs, LogsTruncated: truncated, node: c.node}, nil
}

// clearJob removes a job container of the same name left by an earlier
// run (killed singlecloud, failed cleanup). It refuses to touch anything
// but zke's job containers of the cluster.
func (c *Docker) clearJob(ctx context.Context, n ContainerSpec) error {
	info, err := c.Inspect(ctx, n.Name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.owned(info, n.Cluster); err != nil {
		return err
	}
	if info.Labels[LabelJob] != "true" {
		return fmt.Errorf("%w: job %s on %s: a zke component container has that name: pick another job name", ErrConflict, n.Name, c.node)
	}
	c.log.Info("removing leftover job container", "container", n.Name)
	return c.removeID(ctx, info.ID, n.Name)
}

// wait blocks until the container stops or ctx ends, and returns its exit
// code.
func (c *Docker) wait(ctx context.Context, id, name string) (int, error) {
	op := "wait for container " + name
	resp, err := c.send(ctx, call{op: op, method: http.MethodPost, path: "/containers/" + url.PathEscape(id) + "/wait",
		query: url.Values{"condition": {"not-running"}}})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		StatusCode int
		Error      *struct{ Message string }
	}
	if err := decodeJSON(resp, &out); err != nil {
		if ctx.Err() != nil || !isDecodeError(err) {
			return 0, c.connError(ctx, op, err)
		}
		return 0, fmt.Errorf("%s on %s: decode answer: %w", op, c.node, err)
	}
	if out.Error != nil && out.Error.Message != "" {
		return 0, fmt.Errorf("%s on %s: %w", op, c.node, &APIError{Status: resp.StatusCode, Message: out.Error.Message})
	}
	return out.StatusCode, nil
}

// cleanup force-removes (killing first if it runs) a job container under a
// fresh context, so that it also happens after ctx was cancelled.
func (c *Docker) cleanup(ctx context.Context, id, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := c.removeID(ctx, id, name); err != nil {
		c.log.Warn("job container not removed; RemoveAll or the next run of the job removes it", "container", name, "err", err)
	}
}
