package docker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// hostView is what the status knows of one member: its containers of the
// app, or, when Down is set, why they could not be seen (the host is
// unreachable, or its Docker did not answer).
type hostView struct {
	Name       string
	Down       string
	Containers []container
}

// GetApplicationStatus compares the last request applied for app (from
// Desired) with the app's containers on the members: one docker ps and
// one formatted docker inspect of just those containers on each reachable
// member, in parallel. Unreachable members, and those whose Docker does
// not answer, show 0 ready of the replicas attributed to them, with the
// reason.
func (o *operator) GetApplicationStatus(ctx context.Context, app string) (*model.ApplicationStatus, error) {
	req, ok := o.desired(app)
	if !ok || req == nil {
		return &model.ApplicationStatus{App: app, Versions: []model.VersionStatus{}}, nil
	}
	m, err := o.members()
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", app, err)
	}
	views := make([]hostView, len(m.all))
	index := map[string]int{}
	for i, h := range m.all {
		views[i].Name = h.Name
		index[h.Name] = i
		if h.Status != hosts.StatusReachable {
			views[i].Down = "host unreachable: " + unreachableReason(h)
		}
	}
	// A host's failure is its view's reason, never the call's error.
	_ = o.forEach(ctx, m.reachable, func(ctx context.Context, host string) error {
		v := &views[index[host]]
		cs, err := o.inspectHost(ctx, host, app)
		var he *hostError
		switch {
		case errors.As(err, &he) && he.NotReady:
			v.Down = "host unreachable: " + he.Err.Error()
		case err != nil:
			v.Down = "cannot list containers: " + err.Error()
		}
		v.Containers = cs
		return nil
	})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("status of %s: %w", app, err)
	}
	return computeStatus(app, req, views, o.clock(), o.minReady), nil
}

// inspectHost returns the app's containers on host. A container removed
// between the listing and the inspect makes docker inspect fail after
// printing the others: what it printed is used.
func (o *operator) inspectHost(ctx context.Context, host, app string) ([]container, error) {
	out, err := o.run(ctx, host, idsArgv(app), "docker ps")
	if err != nil {
		return nil, err
	}
	ids := parseIDs(out)
	if len(ids) == 0 {
		return nil, nil
	}
	out, err = o.run(ctx, host, inspectArgv(ids), "docker inspect")
	var exit *transport.ExitError
	if err != nil && !(errors.As(err, &exit) && len(strings.TrimSpace(string(out))) > 0) {
		return nil, err
	}
	cs, perr := parseInspect(out)
	if perr != nil {
		return nil, fmt.Errorf("docker inspect on host %s: %w", host, perr)
	}
	return cs, nil
}

// tally is one version's count on one host.
type tally struct {
	desired, ready int
	reasons        []string
}

func (t *tally) reason(r string) {
	for _, have := range t.reasons {
		if have == r {
			return
		}
	}
	t.reasons = append(t.reasons, r)
}

// computeStatus is the status of req's versions given what the members
// (views, every member) show at now. Each desired replica is looked for
// by its container name on every member seen, so a replica counts
// wherever an earlier Apply put it; one found nowhere is attributed to
// the host the placement rule gives it among all members (reachable or
// not), where it is "missing", or unseen because that host is down. A
// replica is ready when its container is (see readiness). Levels are
// model.Level of ready and desired: per host, per version, overall.
func computeStatus(app string, req *model.ApplyRequest, views []hostView, now time.Time, minReady time.Duration) *model.ApplicationStatus {
	st := &model.ApplicationStatus{App: app, Versions: []model.VersionStatus{}}
	if req == nil {
		return st
	}
	type copyOf struct {
		host string
		c    container
	}
	found := map[string][]copyOf{} // container name → its copies on the members seen
	names := make([]string, len(views))
	down := map[string]string{}
	for i, v := range views {
		names[i] = v.Name
		down[v.Name] = v.Down
		if v.Down != "" {
			continue
		}
		for _, c := range v.Containers {
			found[c.Name] = append(found[c.Name], copyOf{v.Name, c})
		}
	}
	hashes := make([]string, len(req.Deployments))
	total := 0
	for k, d := range req.Deployments {
		hashes[k] = specHash(d)
		total += replicas(d)
	}
	tallies := make([]map[string]*tally, len(req.Deployments))
	for k := range tallies {
		tallies[k] = map[string]*tally{}
	}
	at := func(k int, host string) *tally {
		t := tallies[k][host]
		if t == nil {
			t = &tally{}
			tallies[k][host] = t
		}
		return t
	}
	for _, r := range spread(app, req.Deployments, names) {
		host, ready, reason := r.Host, false, "missing"
		if d := down[r.Host]; d != "" {
			reason = d
		}
		// Of several copies (left by a change of members), the ready one
		// counts, else the one on the placed host.
		for n, cp := range found[r.Name] {
			ok, why := readiness(cp.c, hashes[r.Dep], now, minReady)
			if n == 0 || ok && !ready || ok == ready && cp.host == r.Host {
				host, ready, reason = cp.host, ok, why
			}
		}
		t := at(r.Dep, host)
		t.desired++
		if ready {
			t.ready++
		} else {
			t.reason(reason)
		}
	}
	readySum := 0
	for k, d := range req.Deployments {
		vs := model.VersionStatus{Version: d.Version, Desired: replicas(d), Nodes: []model.NodeStatus{}}
		if total > 0 {
			vs.Percent = float64(vs.Desired) / float64(total) * 100
		}
		for host, t := range tallies[k] {
			vs.Ready += t.ready
			vs.Nodes = append(vs.Nodes, model.NodeStatus{Node: host, Desired: t.desired, Ready: t.ready,
				Healthy: model.HealthInfo{Level: model.Level(t.ready, t.desired)}, Reason: strings.Join(t.reasons, "; ")})
		}
		vs.Ready = min(vs.Ready, vs.Desired)
		vs.Healthy.Level = model.Level(vs.Ready, vs.Desired)
		sort.Slice(vs.Nodes, func(i, j int) bool { return vs.Nodes[i].Node < vs.Nodes[j].Node })
		readySum += vs.Ready
		st.Versions = append(st.Versions, vs)
	}
	sort.SliceStable(st.Versions, func(i, j int) bool { return st.Versions[i].Version < st.Versions[j].Version })
	st.Healthy.Level = model.Level(readySum, total)
	return st
}

// readiness says whether c serves as its version's replica now (with
// hash the version's spec hash), and if not, why: it must run the
// current spec, run without restarting, be healthy if it has a health
// check, and have been running at least minReady.
func readiness(c container, hash string, now time.Time, minReady time.Duration) (bool, string) {
	switch {
	case c.SpecHash != hash:
		return false, "runs an outdated spec"
	case c.Restarting:
		return false, fmt.Sprintf("restarting, exit code %d, %s", c.ExitCode, plural(c.RestartCount, "restart"))
	case c.Status == "paused":
		return false, "paused"
	case c.Status == "created":
		return false, "created, not started"
	case !c.Running && c.Status == "dead":
		return false, fmt.Sprintf("dead, exit code %d", c.ExitCode)
	case !c.Running:
		return false, fmt.Sprintf("exited with code %d", c.ExitCode)
	case c.Health != "" && c.Health != "healthy":
		return false, "health check " + c.Health
	case now.Sub(c.StartedAt) < minReady:
		return false, fmt.Sprintf("running for less than %s", minReady)
	}
	return true, ""
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
