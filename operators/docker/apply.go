package docker

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// hostPlan is what Apply does on one host: remove the containers named in
// Remove, then start the replicas in Start.
type hostPlan struct {
	Remove []string
	Start  []replica
}

// decide compares the replicas wanted on a host (with hashes, the spec
// hash of each deployment by index) with the app's containers there:
//   - a container not wanted there, or whose spec hash is not its
//     version's, is removed (one under a wanted name is then started
//     anew);
//   - a wanted replica without a container is started;
//   - a container with the right name and hash is left alone, whatever
//     its state: an exited one is the restart policy's business, and the
//     status reports it.
//
// Both lists are sorted, so a plan is deterministic.
func decide(want []replica, hashes []string, have []listed) hostPlan {
	wanted := map[string]replica{}
	for _, r := range want {
		wanted[r.Name] = r
	}
	kept := map[string]bool{}
	var p hostPlan
	for _, c := range have {
		r, ok := wanted[c.Name]
		if ok && c.SpecHash == hashes[r.Dep] && !kept[c.Name] {
			kept[c.Name] = true
			continue
		}
		p.Remove = append(p.Remove, c.Name)
	}
	for _, r := range want {
		if !kept[r.Name] {
			p.Start = append(p.Start, r)
		}
	}
	sort.Strings(p.Remove)
	sort.Slice(p.Start, func(i, j int) bool { return p.Start[i].Name < p.Start[j].Name })
	return p
}

// Apply makes the reachable members run exactly req's containers: on
// each, in parallel, it lists the app's containers, removes those not
// wanted there or built from another spec, and starts the missing ones.
// Members that get no replica lose the app's containers. Unreachable
// members are left as they are (the next Apply after they come back
// cleans them). Errors name the host and carry docker's stderr.
func (o *operator) Apply(ctx context.Context, req *model.ApplyRequest) (*model.ApplyResponse, error) {
	if req == nil || req.App == "" {
		return nil, errors.New("apply: the request names no application")
	}
	m, err := o.members()
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", req.App, err)
	}
	rs, err := place(req.App, req.Deployments, m.reachable)
	if err != nil {
		return nil, fmt.Errorf("apply %s in environment %s: %w", req.App, o.env.Name, err)
	}
	hashes := make([]string, len(req.Deployments))
	for k, d := range req.Deployments {
		hashes[k] = specHash(d)
	}
	// Every argv is built before anything runs: a bad limit fails the
	// apply without touching a host.
	argvs := map[string][]string{}
	for _, r := range rs {
		argv, err := runArgv(req.App, req.Deployments[r.Dep], r.Name, hashes[r.Dep])
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", req.App, err)
		}
		argvs[r.Name] = argv
	}
	groups := byHost(rs)
	err = o.forEach(ctx, m.reachable, func(ctx context.Context, host string) error {
		return o.applyHost(ctx, host, req.App, groups[host], hashes, argvs)
	})
	if err != nil {
		return nil, fmt.Errorf("apply %s in environment %s: %w", req.App, o.env.Name, err)
	}
	return &model.ApplyResponse{Success: true, Message: fmt.Sprintf("%d containers on %d hosts", len(rs), len(groups))}, nil
}

// applyHost carries out decide's plan on one host. Every start is tried
// even when one fails; the failures are joined.
func (o *operator) applyHost(ctx context.Context, host, app string, want []replica, hashes []string, argvs map[string][]string) error {
	out, err := o.run(ctx, host, listArgv(app), "docker ps")
	if err != nil {
		return err
	}
	have, err := parseList(out)
	if err != nil {
		return fmt.Errorf("docker ps on host %s: %w", host, err)
	}
	p := decide(want, hashes, have)
	if len(p.Remove) > 0 {
		if _, err := o.run(ctx, host, removeArgv(p.Remove), "docker rm"); err != nil {
			return err
		}
	}
	var errs []error
	for _, r := range p.Start {
		if _, err := o.run(ctx, host, argvs[r.Name], "docker run "+r.Name); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}
