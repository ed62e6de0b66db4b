package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ContainerInfo is the state of one container.
type ContainerInfo struct {
	// ID is the full container ID, Name its name without the leading /.
	ID, Name string
	// Image is the reference the container was created from.
	Image string
	// Labels are all of the container's labels.
	Labels map[string]string
	// Status is Docker's state: created, running, paused, restarting,
	// removing, exited or dead.
	Status string
	// Running is true while the process runs (also when paused or
	// restarting).
	Running bool
	// ExitCode is the last exit code; Error the daemon's error from the
	// last start, if any.
	ExitCode int
	Error    string
	// Health is "", "starting", "healthy" or "unhealthy".
	Health string
	// StartedAt and FinishedAt are zero when never started / finished.
	StartedAt, FinishedAt time.Time
	// RestartCount counts the restarts by the restart policy.
	RestartCount int
	// Tty is true when the container has a terminal (its logs are then
	// not multiplexed).
	Tty bool
}

// Managed reports whether zke created the container.
func (i ContainerInfo) Managed() bool { return i.Labels[LabelManaged] == "true" }

// Cluster is the container's io.zke.cluster label.
func (i ContainerInfo) Cluster() string { return i.Labels[LabelCluster] }

// SpecHash is the container's io.zke.spec-hash label.
func (i ContainerInfo) SpecHash() string { return i.Labels[LabelSpecHash] }

// Container is one entry of List.
type Container struct {
	// ID and Name (without the leading /).
	ID, Name string
	// Image is the reference the container was created from.
	Image string
	// State is Docker's state (running, exited, ...); Status its human
	// description ("Up 3 minutes").
	State, Status string
	// Labels are all of the container's labels.
	Labels map[string]string
	// Created is when the container was created.
	Created time.Time
}

// inspectJSON is the part of GET /containers/{id}/json we read.
type inspectJSON struct {
	ID     string `json:"Id"`
	Name   string
	Config struct {
		Image  string
		Labels map[string]string
		Tty    bool
	}
	State struct {
		Status     string
		Running    bool
		ExitCode   int
		Error      string
		StartedAt  string
		FinishedAt string
		Health     *struct{ Status string }
	}
	RestartCount int
}

// Inspect returns the state of the container name (or ID), any container,
// zke's or not. A missing container matches ErrNotFound.
func (c *Docker) Inspect(ctx context.Context, name string) (ContainerInfo, error) {
	var in inspectJSON
	err := c.do(ctx, call{op: "inspect container " + name, method: http.MethodGet, path: "/containers/" + url.PathEscape(name) + "/json"}, &in)
	if err != nil {
		return ContainerInfo{}, err
	}
	info := ContainerInfo{
		ID: in.ID, Name: strings.TrimPrefix(in.Name, "/"), Image: in.Config.Image, Labels: in.Config.Labels,
		Status: in.State.Status, Running: in.State.Running, ExitCode: in.State.ExitCode, Error: in.State.Error,
		StartedAt: parseTime(in.State.StartedAt), FinishedAt: parseTime(in.State.FinishedAt),
		RestartCount: in.RestartCount, Tty: in.Config.Tty,
	}
	if in.State.Health != nil {
		info.Health = in.State.Health.Status
	}
	return info, nil
}

// List returns zke's containers of cluster, running or not; an empty
// cluster lists zke's containers of every cluster. Other containers are
// never listed.
func (c *Docker) List(ctx context.Context, cluster string) ([]Container, error) {
	labels := []string{LabelManaged + "=true"}
	if cluster != "" {
		labels = append(labels, LabelCluster+"="+cluster)
	}
	filters, err := json.Marshal(map[string][]string{"label": labels})
	if err != nil {
		return nil, fmt.Errorf("list containers on %s: %w", c.node, err)
	}
	var out []struct {
		ID      string `json:"Id"`
		Names   []string
		Image   string
		State   string
		Status  string
		Labels  map[string]string
		Created int64
	}
	err = c.do(ctx, call{op: "list containers", method: http.MethodGet, path: "/containers/json",
		query: url.Values{"all": {"1"}, "filters": {string(filters)}}}, &out)
	if err != nil {
		return nil, err
	}
	list := make([]Container, 0, len(out))
	for _, o := range out {
		// The daemon filtered; check again rather than trust that an
		// old daemon understood the filter.
		if o.Labels[LabelManaged] != "true" || cluster != "" && o.Labels[LabelCluster] != cluster {
			continue
		}
		name := ""
		if len(o.Names) > 0 {
			name = strings.TrimPrefix(o.Names[0], "/")
		}
		list = append(list, Container{ID: o.ID, Name: name, Image: o.Image, State: o.State, Status: o.Status,
			Labels: o.Labels, Created: time.Unix(o.Created, 0)})
	}
	return list, nil
}

// Remove force-removes zke's container name (killing it if it runs). A
// missing container is not an error. A container zke did not create, or
// that belongs to another cluster than Options.Cluster, is left alone and
// reported as a *ForeignContainerError.
func (c *Docker) Remove(ctx context.Context, name string) error {
	info, err := c.ours(ctx, name)
	if err != nil || info == nil {
		return err
	}
	return c.removeID(ctx, info.ID, name)
}

// ours inspects zke's container name of this cluster: nil when there is
// none, a *ForeignContainerError when it is not zke's or not this
// cluster's.
func (c *Docker) ours(ctx context.Context, name string) (*ContainerInfo, error) {
	info, err := c.Inspect(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.owned(info, c.cluster); err != nil {
		return nil, err
	}
	return &info, nil
}

// Stop stops zke's container name gracefully: SIGTERM, then SIGKILL
// after grace (whole seconds; the call's timeout is extended by it). A missing or
// stopped container is not an error; a foreign one is left alone
// (*ForeignContainerError). It lets a component that drains on SIGTERM
// (kube-apiserver's shutdown delay) leave its load balancer first.
func (c *Docker) Stop(ctx context.Context, name string, grace time.Duration) error {
	info, err := c.ours(ctx, name)
	if err != nil || info == nil || !info.Running {
		return err
	}
	secs := int(grace.Round(time.Second) / time.Second)
	err = c.do(ctx, call{op: "stop container " + name, method: http.MethodPost, path: "/containers/" + url.PathEscape(info.ID) + "/stop",
		query: url.Values{"t": {strconv.Itoa(secs)}}, wait: time.Duration(secs) * time.Second}, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// RemoveAll force-removes every container of cluster that zke created
// (components and jobs) and nothing else; cluster must not be empty. It
// tries every container and returns the failures joined.
func (c *Docker) RemoveAll(ctx context.Context, cluster string) error {
	if cluster == "" {
		return fmt.Errorf("%w: RemoveAll on %s needs a cluster name", ErrInvalidSpec, c.node)
	}
	list, err := c.List(ctx, cluster)
	if err != nil {
		return err
	}
	var errs []error
	for _, ct := range list {
		if err := c.removeID(ctx, ct.ID, ct.Name); err != nil {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// owned checks that zke created the container for cluster (any cluster
// when empty).
func (c *Docker) owned(info ContainerInfo, cluster string) error {
	if !info.Managed() {
		return &ForeignContainerError{Name: info.Name, Node: c.node}
	}
	if cluster != "" && info.Cluster() != cluster {
		return &ForeignContainerError{Name: info.Name, Node: c.node, Owner: info.Cluster()}
	}
	return nil
}

// removeID force-removes a container by ID (so that what was checked is
// what goes), with its anonymous volumes. Gone already is success.
func (c *Docker) removeID(ctx context.Context, id, name string) error {
	err := c.do(ctx, call{op: "remove container " + name, method: http.MethodDelete, path: "/containers/" + url.PathEscape(id),
		query: url.Values{"force": {"1"}, "v": {"1"}}}, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// start starts a container; already started is success.
func (c *Docker) start(ctx context.Context, id, name string) error {
	return c.do(ctx, call{op: "start container " + name, method: http.MethodPost, path: "/containers/" + url.PathEscape(id) + "/start"}, nil)
}

// ContainerLogs returns the last tail lines (all when tail <= 0) of the
// container's stdout and stderr, interleaved as written, at most
// maxLogBytes (the end is kept). It works on any container.
func (c *Docker) ContainerLogs(ctx context.Context, name string, tail int) ([]byte, error) {
	info, err := c.Inspect(ctx, name)
	if err != nil {
		return nil, err
	}
	logs, _, err := c.logs(ctx, info.ID, name, tail, info.Tty)
	return logs, err
}

// logs reads a container's logs under the per-call timeout, keeping the
// last maxLogBytes; truncated says whether more was written.
func (c *Docker) logs(ctx context.Context, id, name string, tail int, tty bool) ([]byte, bool, error) {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	q := url.Values{"stdout": {"1"}, "stderr": {"1"}, "tail": {"all"}}
	if tail > 0 {
		q.Set("tail", strconv.Itoa(tail))
	}
	op := "logs of container " + name
	resp, err := c.send(ctx, call{op: op, method: http.MethodGet, path: "/containers/" + url.PathEscape(id) + "/logs", query: q})
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	out := newTailBuffer(maxLogBytes)
	if tty {
		_, err = copyBody(out, resp.Body)
	} else {
		err = demux(resp.Body, out, out)
	}
	if err != nil {
		if ctx.Err() != nil || !errors.Is(err, errBadFrame) {
			return nil, false, c.connError(ctx, op, err)
		}
		return nil, false, fmt.Errorf("%s on %s: %w", op, c.node, err)
	}
	return out.Bytes(), out.Truncated(), nil
}

// parseTime parses Docker's RFC 3339 times; Docker's zero time
// ("0001-01-01T00:00:00Z") and garbage give the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}
