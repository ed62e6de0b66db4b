package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// fakeHosts is a host manager whose hosts run a tiny fake docker CLI that
// understands the argv the operator builds. fail, if set, may inject an
// error before a command runs.
type fakeHosts struct {
	mu      sync.Mutex
	members []hosts.Host
	docker  map[string]map[string]*fakeContainer // host → name → container
	calls   []string                             // "host: docker verb"
	fail    func(host string, argv []string) error
	now     time.Time
}

type fakeContainer struct {
	labels  map[string]string
	running bool
	exit    int
}

func newFakeHosts(statuses ...string) *fakeHosts {
	f := &fakeHosts{docker: map[string]map[string]*fakeContainer{}, now: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)}
	for i, s := range statuses {
		name := fmt.Sprintf("h%d", i+1)
		f.members = append(f.members, hosts.Host{Name: name, Status: hosts.Status(s), Reason: "probe failed"})
		f.docker[name] = map[string]*fakeContainer{}
	}
	return f
}

func (f *fakeHosts) Select(selector string) ([]hosts.Host, error) {
	if selector == "" {
		return nil, errors.New("bad selector")
	}
	return slices.Clone(f.members), nil
}

func (f *fakeHosts) Exec(ctx context.Context, host string, argv []string) (transport.ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, host+": "+strings.Join(argv[:2], " "))
	if f.fail != nil {
		if err := f.fail(host, argv); err != nil {
			return transport.ExecResult{ExitCode: -1}, fmt.Errorf("host %s: %w", host, err)
		}
	}
	d := f.docker[host]
	var out strings.Builder
	switch argv[1] {
	case "version":
		out.WriteString("20.10.24\n")
	case "ps":
		app := ""
		for _, a := range argv {
			if v, ok := strings.CutPrefix(a, "label="+labelApp+"="); ok {
				app = v
			}
		}
		for _, name := range sortedKeys(d) {
			c := d[name]
			if c.labels[labelManagedBy] != managedBy || c.labels[labelApp] != app {
				continue
			}
			if slices.Contains(argv, "-q") {
				fmt.Fprintf(&out, "id-%s\n", name)
				continue
			}
			state := "exited"
			if c.running {
				state = "running"
			}
			b, _ := json.Marshal(listed{Name: name, SpecHash: c.labels[labelSpecHash], State: state})
			fmt.Fprintf(&out, "%s\n", b)
		}
	case "inspect":
		for _, id := range argv[6:] {
			name := strings.TrimPrefix(id, "id-")
			c, ok := d[name]
			if !ok {
				return transport.ExecResult{Stdout: []byte(out.String()), ExitCode: 1}, exitError(argv, "Error: No such object: "+id)
			}
			b, _ := json.Marshal(container{Name: "/" + name, Version: c.labels[labelVersion], SpecHash: c.labels[labelSpecHash],
				Status: map[bool]string{true: "running", false: "exited"}[c.running], Running: c.running,
				StartedAt: f.now.Add(-time.Minute), ExitCode: c.exit})
			fmt.Fprintf(&out, "%s\n", b)
		}
	case "rm":
		for _, name := range argv[4:] {
			delete(d, strings.TrimPrefix(name, "id-"))
		}
	case "run":
		c := &fakeContainer{labels: map[string]string{}, running: true}
		name := ""
		for i := 2; i < len(argv) && strings.HasPrefix(argv[i], "-"); i++ {
			switch argv[i] {
			case "-d":
				continue
			case "--name":
				name = argv[i+1]
			case "--label":
				k, v, _ := strings.Cut(argv[i+1], "=")
				c.labels[k] = v
			}
			i++
		}
		if _, dup := d[name]; dup {
			return transport.ExecResult{Stderr: []byte("Conflict. The container name is already in use"), ExitCode: 125},
				exitError(argv, "docker: Error response from daemon: Conflict. The container name is already in use")
		}
		d[name] = c
		fmt.Fprintf(&out, "id-%s\n", name)
	default:
		return transport.ExecResult{ExitCode: 1}, exitError(argv, "unknown command "+argv[1])
	}
	return transport.ExecResult{Stdout: []byte(out.String())}, nil
}

// exitError is how hosts.Manager reports a command that exited non-zero.
func exitError(argv []string, stderr string) error {
	return &transport.NodeError{Node: "n", Address: "a:22", Op: "exec", Err: &transport.ExitError{Cmd: transport.ShellJoin(argv), Code: 1, Stderr: stderr}}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// containers lists the names of the containers on every host, "name@host".
func (f *fakeHosts) containers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, h := range sortedKeys(f.docker) {
		for _, n := range sortedKeys(f.docker[h]) {
			out = append(out, n+"@"+h)
		}
	}
	return out
}

func (f *fakeHosts) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	sort.Strings(c) // hosts run in parallel
	return c
}

var testEnv = model.Environment{Name: "edge", Kind: model.EnvironmentHosts, Selector: "group=edge"}

func TestNewDefaults(t *testing.T) {
	op := New(testEnv, newFakeHosts("Reachable"), nil, Options{}).(*operator)
	if op.GetType() != model.EnvironmentHosts || op.minReady != 3*time.Second || op.workers != 8 || op.clock == nil {
		t.Errorf("defaults: type %q minReady %v workers %d", op.GetType(), op.minReady, op.workers)
	}
	if _, ok := op.desired("x"); ok {
		t.Error("a nil Desired has a request")
	}
}

func TestMembersNotReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []string
		want     string
	}{
		{"no host matches", nil, `selector "group=edge" matches no registered host`},
		{"none reachable", []string{"Unreachable", "Unknown"}, "h1 is Unreachable: probe failed, h2 is Unknown: probe failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := New(testEnv, newFakeHosts(tc.statuses...), nil, Options{})
			ctx := context.Background()
			errs := map[string]error{"health": op.HealthCheck(ctx)}
			_, errs["apply"] = op.Apply(ctx, &model.ApplyRequest{App: "web"})
			_, errs["status"] = op.GetApplicationStatus(ctx, "web")
			for what, err := range errs {
				if what == "status" {
					continue // nothing desired: an empty status
				}
				if !errors.Is(err, operators.ErrEnvironmentNotReady) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: err = %v, want ErrEnvironmentNotReady naming %q", what, err, tc.want)
				}
			}
		})
	}
}

func TestHealthCheck(t *testing.T) {
	f := newFakeHosts("Unreachable", "Reachable", "Reachable")
	op := New(testEnv, f, nil, Options{})
	f.fail = func(host string, argv []string) error {
		if host == "h2" {
			return &transport.NodeError{Node: host, Op: "connect", Err: transport.ErrUnreachable}
		}
		return nil
	}
	if err := op.HealthCheck(context.Background()); err != nil {
		t.Fatalf("one answering member: %v", err)
	}
	if got := f.takeCalls(); !slices.Equal(got, []string{"h2: docker version", "h3: docker version"}) {
		t.Errorf("calls %q", got)
	}
	f.fail = func(host string, argv []string) error { return exitError(argv, "Cannot connect to the Docker daemon") }
	err := op.HealthCheck(context.Background())
	if !errors.Is(err, operators.ErrEnvironmentNotReady) || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Errorf("no daemon answers: err = %v", err)
	}
}

func TestUninstall(t *testing.T) {
	f := newFakeHosts("Reachable", "Reachable")
	op := New(testEnv, f, nil, Options{})
	ctx := context.Background()
	req := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{{Version: "v1", Image: "nginx:1", Replicas: intp(3)}}}
	if _, err := op.Apply(ctx, req); err != nil {
		t.Fatal(err)
	}
	f.docker["h1"]["other"] = &fakeContainer{labels: map[string]string{labelManagedBy: managedBy, labelApp: "api"}}
	f.docker["h2"]["mine"] = &fakeContainer{labels: map[string]string{labelApp: "web"}} // not managed by us

	f.members[1].Status = hosts.StatusUnreachable
	f.takeCalls()
	err := op.Uninstall(ctx, "web")
	if !errors.Is(err, operators.ErrEnvironmentNotReady) || !strings.Contains(err.Error(), "h2 is Unreachable") {
		t.Fatalf("a member unreachable: err = %v", err)
	}
	if calls := f.takeCalls(); len(calls) != 0 {
		t.Errorf("ran %q with a member unreachable", calls)
	}

	f.members[1].Status = hosts.StatusReachable
	if err := op.Uninstall(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if got := f.containers(); !slices.Equal(got, []string{"other@h1", "mine@h2"}) {
		t.Errorf("left %q", got)
	}
	if err := op.Uninstall(ctx, "web"); err != nil {
		t.Errorf("nothing to remove: %v", err)
	}
	if got := f.takeCalls(); !slices.Equal(got, []string{"h1: docker ps", "h1: docker ps", "h1: docker rm", "h2: docker ps", "h2: docker ps", "h2: docker rm"}) {
		t.Errorf("calls %q", got)
	}
	if err := New(testEnv, newFakeHosts(), nil, Options{}).Uninstall(ctx, "web"); err != nil {
		t.Errorf("no member: %v", err)
	}
}
