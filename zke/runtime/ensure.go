package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
)

// Action says what Ensure did.
type Action string

// The actions of Ensure.
const (
	// ActionNone: the container already ran the same spec.
	ActionNone Action = "none"
	// ActionStarted: the container had the same spec but was stopped
	// (or paused) and was started.
	ActionStarted Action = "started"
	// ActionCreated: there was no container; one was created and started.
	ActionCreated Action = "created"
	// ActionReplaced: zke's container had another spec (or was dead); it
	// was removed and a new one created and started.
	ActionReplaced Action = "replaced"
)

// Ensure makes the container spec.Name run spec, idempotently:
//   - same spec hash and running (or restarting): nothing;
//   - same hash, stopped: start it (paused: unpause it);
//   - another hash, or dead: remove zke's container, create, start;
//   - no container: create, start.
//
// The restart policy defaults to unless-stopped. A container of that name
// that zke did not create for this cluster is never touched: the error is
// a *ForeignContainerError. The image must be on the node, else the error
// is an *ImageMissingError (checked before anything is removed). When the
// new container fails to start it is left in place, created, for its logs;
// the next Ensure starts it again. Each API call is bounded by the per-call
// timeout and ctx.
func (c *Docker) Ensure(ctx context.Context, spec ContainerSpec) (Action, error) {
	n, err := spec.normalized(c.cluster, RestartUnlessStopped)
	if err != nil {
		return "", err
	}
	hash := specHash(n)
	info, err := c.Inspect(ctx, n.Name)
	exists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return "", err
	}
	if exists {
		if err := c.owned(info, n.Cluster); err != nil {
			return "", err
		}
		if info.SpecHash() == hash {
			switch info.Status {
			case "running", "restarting":
				return ActionNone, nil
			case "paused":
				err := c.do(ctx, call{op: "unpause container " + n.Name, method: http.MethodPost, path: "/containers/" + url.PathEscape(info.ID) + "/unpause"}, nil)
				if err != nil {
					return "", err
				}
				return ActionStarted, nil
			case "created", "exited":
				if err := c.start(ctx, info.ID, n.Name); err != nil {
					return "", err
				}
				c.log.Info("container started", "container", n.Name)
				return ActionStarted, nil
			}
			// dead or removing: replace it.
		}
	}
	present, err := c.ImagePresent(ctx, n.Image)
	if err != nil {
		return "", err
	}
	if !present {
		return "", &ImageMissingError{Image: n.Image, Node: c.node}
	}
	action := ActionCreated
	if exists {
		if err := c.removeID(ctx, info.ID, n.Name); err != nil {
			return "", fmt.Errorf("replace container %s on %s: %w", n.Name, c.node, err)
		}
		action = ActionReplaced
	}
	id, err := c.create(ctx, n, hash, false)
	if err != nil {
		return "", err
	}
	if err := c.start(ctx, id, n.Name); err != nil {
		return "", err
	}
	c.log.Info("container "+string(action), "container", n.Name, "image", n.Image)
	return action, nil
}
