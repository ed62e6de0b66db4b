package hosts

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// Select returns the registered hosts selector (a Kubernetes label
// selector) matches, sorted by name; none is not an error. It is how an
// environment of hosts finds its members at the moment it acts.
func (m *Manager) Select(selector string) ([]Host, error) {
	sel, err := labels.Parse(selector)
	if err != nil || selector == "" {
		return nil, validation.Errors{{Field: "selector", Reason: fmt.Sprintf("%q is not a label selector like rack=a,env!=test", selector)}}
	}
	var out []Host
	for _, h := range m.List() {
		if sel.Matches(labels.Set(h.Labels)) {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Exec runs argv on the named host over SSH, quoted word by word for the
// host's shell, with the host's sealed key and pinned host key; ctx bounds
// it. It is for other managers acting on hosts (the application operator
// of hosts environments); an admin's commands go through RunCommand,
// which audits them.
func (m *Manager) Exec(ctx context.Context, name string, argv []string) (transport.ExecResult, error) {
	if len(argv) == 0 {
		return transport.ExecResult{}, fmt.Errorf("host %s: no command to run", name)
	}
	t, _, _, err := m.target(name)
	if err != nil {
		return transport.ExecResult{}, err
	}
	out, err := m.opts.Executor.Exec(ctx, t, transport.ShellJoin(argv))
	if err != nil {
		return out, fmt.Errorf("host %s: %w", name, err)
	}
	return out, nil
}
