package clustermanager

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// pinnedTable is a hostTable that knows pinned host keys.
type pinnedTable struct {
	hostTable
	keys map[string]string
}

func (p pinnedTable) PinnedHostKey(name string) (string, error) { return p.keys[name], nil }

// recordingChecker records what CheckHost asks of the installer and
// answers with err, after logging a line and a warning.
type recordingChecker struct {
	cfg  model.ClusterConfig
	keys map[string]string
	err  error
}

func (c *recordingChecker) Check(_ context.Context, cfg model.ClusterConfig, keys map[string]string, sink zke.Sink) error {
	c.cfg, c.keys = cfg, keys
	sink.Log(workflow.Line{Level: "info", Step: "preflight", Node: cfg.Nodes[0].Name, Message: "Linux/x86_64: ok"})
	sink.Log(workflow.Line{Level: "warn", Step: "preflight", Node: cfg.Nodes[0].Name, Message: "swap is on"})
	return c.err
}

// CheckHost checks a registered host as one node in the roles asked (all
// by default), pins its registered host key, and lists each node's
// problem apart; an unknown host is an error naming the field.
func TestCheckHost(t *testing.T) {
	key := testKey(t)
	dir := pinnedTable{hostTable{"a": {Name: "a", Address: "10.0.0.1", Port: 2222, User: "ops", SSHKey: key}},
		map[string]string{"a": "ssh-ed25519 AAAA"}}
	checker := &recordingChecker{}
	m := &Manager{opts: Options{Hosts: dir, Checker: checker, Clock: time.Now}}

	res, err := m.CheckHost(context.Background(), "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	n := checker.cfg.Nodes[0]
	if !res.OK || n.Address != "10.0.0.1" || n.SSHPort != 2222 || n.SSHUser != "ops" || checker.cfg.SSHKey != strings.TrimSpace(key) ||
		!slices.Equal(n.Roles, []model.Role{model.RoleEtcd, model.RoleControlPlane, model.RoleWorker}) {
		t.Errorf("checked %+v (ok %v)", n, res.OK)
	}
	if checker.keys["10.0.0.1"] != "ssh-ed25519 AAAA" {
		t.Errorf("host keys %v, want the registered one pinned", checker.keys)
	}
	if len(res.Log) != 2 || !slices.Equal(res.Warnings, []string{"a: swap is on"}) {
		t.Errorf("log %q, warnings %q", res.Log, res.Warnings)
	}

	checker.err = &workflow.StepError{Step: "preflight", Err: errors.Join(errors.New("node a: port 10250 is in use"), errors.New("node a: clock"))}
	res, err = m.CheckHost(context.Background(), "a", []model.Role{model.RoleWorker})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || !slices.Equal(res.Problems, []string{"node a: port 10250 is in use", "node a: clock"}) ||
		!slices.Equal(checker.cfg.Nodes[0].Roles, []model.Role{model.RoleWorker}) {
		t.Errorf("failed check: ok %v, problems %q, roles %v", res.OK, res.Problems, checker.cfg.Nodes[0].Roles)
	}

	if _, err := m.CheckHost(context.Background(), "zz", nil); err == nil {
		t.Error("check of an unknown host succeeded")
	}
	if _, err := (&Manager{opts: Options{Hosts: dir, Clock: time.Now}}).CheckHost(context.Background(), "a", nil); !errors.Is(err, ErrNoInstaller) {
		t.Errorf("check without an installer: %v", err)
	}
}
