package docker

import (
	"context"
	"fmt"

	"github.com/zdnscloud/singlecloud/operators"
)

// Uninstall removes every container the operator made for app on every
// member: those with its managed-by label and io.singlecloud.app=<app>,
// and nothing else. Every member must be reachable, since a container
// left on one that is not would run on unseen: otherwise the error wraps
// operators.ErrEnvironmentNotReady, names the unreachable hosts, and
// nothing is removed, so the caller retries. No container, and no member
// at all (nothing this environment reaches can hold one), is not an
// error.
func (o *operator) Uninstall(ctx context.Context, app string) error {
	if app == "" {
		return fmt.Errorf("uninstall: no application named")
	}
	m, err := o.selectMembers()
	if err != nil {
		return fmt.Errorf("uninstall %s: %w", app, err)
	}
	if down := m.unreachable(); len(down) > 0 {
		return fmt.Errorf("uninstall %s in environment %s: every member must be reachable to remove its containers, and %s: %w",
			app, o.env.Name, describeUnreachable(down), operators.ErrEnvironmentNotReady)
	}
	err = o.forEach(ctx, m.names(), func(ctx context.Context, host string) error {
		out, err := o.run(ctx, host, idsArgv(app), "docker ps")
		if err != nil {
			return err
		}
		ids := parseIDs(out)
		if len(ids) == 0 {
			return nil
		}
		_, err = o.run(ctx, host, removeArgv(ids), "docker rm")
		return err
	})
	if err != nil {
		return fmt.Errorf("uninstall %s in environment %s: %w", app, o.env.Name, err)
	}
	return nil
}
