package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// HostChecker runs, against nodes, the checks a create makes before it
// changes anything, and changes nothing (*zke.Installer.Check).
type HostChecker interface {
	Check(ctx context.Context, cfg model.ClusterConfig, hostKeys map[string]string, sink zke.Sink) error
}

// hostKeys is a HostDirectory that also knows the SSH host key pinned for
// each registered host (the host manager).
type hostKeys interface {
	PinnedHostKey(name string) (string, error)
}

// hostCheckTimeout bounds a host check: a connect and a preflight, each
// of a few bounded commands.
const hostCheckTimeout = 2 * time.Minute

// HostCheck is the outcome of CheckHost.
type HostCheck struct {
	Host  string       `json:"host"`
	Roles []model.Role `json:"roles"`
	// OK is true when the host passed every check: a create with it in
	// those roles would go past preflight.
	OK bool `json:"ok"`
	// Problems stop a create, each with what to do.
	Problems []string `json:"problems,omitempty"`
	// Warnings do not stop a create.
	Warnings []string `json:"warnings,omitempty"`
	// Log is what the checks reported, in order.
	Log     []string `json:"log,omitempty"`
	Seconds float64  `json:"seconds"`
}

// CheckHost runs, against registered host name in roles (every role when
// none is given), what a create checks before it changes anything (zke's
// connect and preflight steps), and changes nothing on the host. A failed
// check is a HostCheck with OK false, not an error; an error is a host or
// role that does not exist, or a singlecloud without an installer.
func (m *Manager) CheckHost(ctx context.Context, name string, roles []model.Role) (HostCheck, error) {
	if m.opts.Checker == nil {
		return HostCheck{}, fmt.Errorf("check host %s: %w", name, ErrNoInstaller)
	}
	if len(roles) == 0 {
		roles = []model.Role{model.RoleEtcd, model.RoleControlPlane, model.RoleWorker}
	}
	cfg := model.ClusterConfig{Name: "host-check", Nodes: []model.Node{{Host: name, Roles: roles}}}
	if err := m.resolveHosts(&cfg); err != nil {
		return HostCheck{}, err
	}
	cfg.ApplyDefaults()
	// Not ValidateCreate: a cluster would not give one node every role,
	// but the check asks for each role's checks at once. The host's
	// fields were validated when it was registered; its address is
	// checked against the policy like a node's.
	if err := m.opts.Addresses.CheckNodes(nil, cfg.Nodes, nil); err != nil {
		return HostCheck{}, err
	}
	pinned := map[string]string{}
	if d, ok := m.opts.Hosts.(hostKeys); ok {
		if key, err := d.PinnedHostKey(name); err == nil && key != "" {
			pinned[cfg.Nodes[0].Address] = key
		}
	}
	ctx, cancel := context.WithTimeout(ctx, hostCheckTimeout)
	defer cancel()
	start := m.opts.Clock()
	sink := &checkSink{}
	err := m.opts.Checker.Check(ctx, cfg, pinned, sink)
	out := HostCheck{Host: name, Roles: roles, OK: err == nil, Seconds: m.opts.Clock().Sub(start).Seconds()}
	out.Log, out.Warnings = sink.lines()
	if err != nil {
		out.Problems = problems(err)
	}
	return out, nil
}

// problems lists the separate failures inside err (one per node, each
// with what to do), or err's message.
func problems(err error) []string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if multi, ok := e.(interface{ Unwrap() []error }); ok {
			var out []string
			for _, one := range multi.Unwrap() {
				out = append(out, problems(one)...)
			}
			return out
		}
	}
	return []string{err.Error()}
}

// checkSink collects a host check's log lines.
type checkSink struct {
	mu       sync.Mutex
	log      []string
	warnings []string
}

func (s *checkSink) Progress(workflow.Progress) {}
func (s *checkSink) Stalled(workflow.Stall)     {}
func (s *checkSink) Checkpoint(context.Context, string, zke.State) error {
	return nil
}

func (s *checkSink) Log(l workflow.Line) {
	line := l.Message
	if l.Node != "" {
		line = l.Node + ": " + line
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, l.Step+": "+line)
	if strings.EqualFold(l.Level, "warn") {
		s.warnings = append(s.warnings, line)
	}
}

func (s *checkSink) lines() (log, warnings []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log), slices.Clone(s.warnings)
}
