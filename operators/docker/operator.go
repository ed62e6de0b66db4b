// Package docker is the operator of environments of kind "hosts": it runs
// an application's versions as Docker containers on the registered hosts
// an environment's selector chooses, through the docker CLI on each host,
// run over SSH by the host manager.
//
// It keeps no state of its own. What runs is recorded on the containers:
// each is named sc-<app>-<slug(version)>-<i> and labelled with the app,
// the version and the hash of that version's deployment, so every call
// recomputes what should run from the request (Apply) or from the last
// request applied (GetApplicationStatus, through Desired), and compares it
// with what the hosts' Docker lists. The placement of replicas on hosts
// is a pure function of the sorted reachable members and the request
// (placement.go), so the same request on the same hosts always gives the
// same containers in the same places.
//
// Containers use host networking (--network host): the hosts' Docker may
// run without a bridge network (--bridge=none), so ports cannot be
// published. A version's ports are therefore the host's ports, and two
// replicas of a version with ports must not share a host: Apply refuses a
// version with ports that has more replicas than there are reachable
// hosts. Distinct versions are placed without regard to each other's
// ports; versions that listen on the same port and land on one host
// collide (the second one keeps restarting, which its status shows).
package docker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// Hosts is what the operator needs of the host manager (hosts.Manager
// implements it): the hosts a selector matches, with their connectivity,
// and a way to run an argv on one of them.
type Hosts interface {
	Select(selector string) ([]hosts.Host, error)
	Exec(ctx context.Context, host string, argv []string) (transport.ExecResult, error)
}

// Desired returns the last request applied for app in this environment
// (what should run), false if none. It is operators.Desired, so that a
// Factory's constructor passes its argument on unchanged.
type Desired = operators.Desired

// Options tune an operator; the zero value is the defaults.
type Options struct {
	// Clock gives the time a container's age is measured against; nil is
	// time.Now.
	Clock func() time.Time
	// MinReady is how long a container must have been running to count as
	// ready (a process that crashes at once is not); 0 means 3s.
	MinReady time.Duration
	// Workers bounds the hosts acted on at once; 0 means 8.
	Workers int
}

// Defaults of Options.
const (
	defaultMinReady = 3 * time.Second
	defaultWorkers  = 8
)

// operator is the Operator of one environment of hosts.
type operator struct {
	env      model.Environment
	hosts    Hosts
	desired  Desired
	clock    func() time.Time
	minReady time.Duration
	workers  int
}

// New returns the operator of env, a hosts environment whose members are
// the hosts env.Selector matches in h at the moment of each call; desired
// gives the last request applied for an application (for its status).
func New(env model.Environment, h Hosts, desired Desired, opts Options) operators.Operator {
	o := &operator{env: env, hosts: h, desired: desired, clock: opts.Clock, minReady: opts.MinReady, workers: opts.Workers}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.minReady <= 0 {
		o.minReady = defaultMinReady
	}
	if o.workers <= 0 {
		o.workers = defaultWorkers
	}
	if o.desired == nil {
		o.desired = func(string) (*model.ApplyRequest, bool) { return nil, false }
	}
	return o
}

// GetType returns model.EnvironmentHosts.
func (o *operator) GetType() string { return model.EnvironmentHosts }

// HealthCheck says whether the environment can take work: at least one
// member is reachable and its Docker daemon answers.
func (o *operator) HealthCheck(ctx context.Context) error {
	m, err := o.members()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range m.reachable {
		out, err := o.run(ctx, h, versionArgv(), "docker version")
		if err == nil && strings.TrimSpace(string(out)) != "" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("docker version on host %s printed no server version", h)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("environment %s: no member's Docker answers: %w: %w", o.env.Name, operators.ErrEnvironmentNotReady, errors.Join(errs...))
}

// members are an environment's hosts at one moment: all those the
// selector matches, sorted by name, and the names of the reachable ones
// (those placement uses).
type members struct {
	all       []hosts.Host
	reachable []string
}

// members selects the environment's hosts now. None matched, or none
// reachable, is an error wrapping operators.ErrEnvironmentNotReady that
// names the selector and the unreachable hosts.
func (o *operator) members() (members, error) {
	m, err := o.selectMembers()
	if err != nil {
		return m, err
	}
	switch {
	case len(m.all) == 0:
		return m, fmt.Errorf("environment %s: selector %q matches no registered host: %w", o.env.Name, o.env.Selector, operators.ErrEnvironmentNotReady)
	case len(m.reachable) == 0:
		return m, fmt.Errorf("environment %s: no host that selector %q matches is reachable (%s): %w",
			o.env.Name, o.env.Selector, describeUnreachable(m.unreachable()), operators.ErrEnvironmentNotReady)
	}
	return m, nil
}

// selectMembers selects the environment's hosts now, however many.
func (o *operator) selectMembers() (members, error) {
	hs, err := o.hosts.Select(o.env.Selector)
	if err != nil {
		return members{}, fmt.Errorf("environment %s: select its hosts with %q: %w", o.env.Name, o.env.Selector, err)
	}
	hs = append([]hosts.Host(nil), hs...)
	sort.Slice(hs, func(i, j int) bool { return hs[i].Name < hs[j].Name })
	m := members{all: hs}
	for _, h := range hs {
		if h.Status == hosts.StatusReachable {
			m.reachable = append(m.reachable, h.Name)
		}
	}
	return m, nil
}

// unreachable returns the members that are not reachable.
func (m members) unreachable() []hosts.Host {
	var out []hosts.Host
	for _, h := range m.all {
		if h.Status != hosts.StatusReachable {
			out = append(out, h)
		}
	}
	return out
}

// names returns the names of every member.
func (m members) names() []string {
	out := make([]string, len(m.all))
	for i, h := range m.all {
		out[i] = h.Name
	}
	return out
}

// describeUnreachable reads "h2 is Unreachable: dial timeout, h3 is Unknown".
func describeUnreachable(hs []hosts.Host) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Name + " is " + unreachableReason(h)
	}
	return strings.Join(parts, ", ")
}

// unreachableReason says why h is not used: its status and the probe's
// reason, if any.
func unreachableReason(h hosts.Host) string {
	s := string(h.Status)
	if s == "" {
		s = string(hosts.StatusUnknown)
	}
	if h.Reason != "" {
		s += ": " + h.Reason
	}
	return s
}

// forEach runs fn on every host, at most o.workers at once, and returns
// the errors joined in the hosts' order. Hosts not started before ctx
// ends fail with ctx's error.
func (o *operator) forEach(ctx context.Context, names []string, fn func(ctx context.Context, host string) error) error {
	errs := make([]error, len(names))
	sem := make(chan struct{}, o.workers)
	var wg sync.WaitGroup
	for i, h := range names {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = fmt.Errorf("host %s: %w", h, ctx.Err())
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(ctx, h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run runs argv on host and returns its standard output. A failure is a
// *hostError naming the host and what was run (what). Output cut at the
// transport's cap is an error: a partial listing must not be taken for
// the whole.
func (o *operator) run(ctx context.Context, host string, argv []string, what string) ([]byte, error) {
	res, err := o.hosts.Exec(ctx, host, argv)
	if err != nil {
		return res.Stdout, execError(host, what, res, err)
	}
	if res.Truncated {
		return res.Stdout, &hostError{Host: host, What: what, Err: errors.New("its output exceeds the transport's cap and was cut")}
	}
	return res.Stdout, nil
}

// hostError is a command that failed on a host: What (the command, in
// short) on Host, and the cause, with the command's stderr. A failure to
// reach the host is NotReady, which errors.Is reports as
// operators.ErrEnvironmentNotReady, so that callers retry.
type hostError struct {
	Host, What string
	Err        error
	NotReady   bool
}

func (e *hostError) Error() string { return fmt.Sprintf("%s on host %s: %v", e.What, e.Host, e.Err) }

func (e *hostError) Unwrap() []error {
	if e.NotReady {
		return []error{operators.ErrEnvironmentNotReady, e.Err}
	}
	return []error{e.Err}
}

// execError wraps a failed Exec: the command's stderr is added unless the
// error already carries it (a *transport.ExitError does), and connection
// failures are marked NotReady.
func execError(host, what string, res transport.ExecResult, err error) error {
	var exit *transport.ExitError
	if stderr := strings.TrimSpace(string(res.Stderr)); stderr != "" && !(errors.As(err, &exit) && exit.Stderr != "") {
		err = fmt.Errorf("%w: %s", err, lastLines(stderr, 2048))
	}
	return &hostError{Host: host, What: what, Err: err, NotReady: unreachable(err)}
}

// unreachable says whether err is a failure to reach or stay connected to
// a host (rather than a command that ran and failed).
func unreachable(err error) bool {
	for _, target := range []error{transport.ErrUnreachable, transport.ErrHandshake, transport.ErrConnectionLost, hosts.ErrNotFound} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// lastLines keeps the end of s, at most max bytes.
func lastLines(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return "…" + s[len(s)-max:]
}
