package docker

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// summary reads a status compactly: "level 75; v1 3/3 75% L100 [h1 1/1 L100, ...]; ...",
// with a node's reason in parentheses.
func summary(st *model.ApplicationStatus) string {
	parts := []string{fmt.Sprintf("level %d", st.Healthy.Level)}
	for _, v := range st.Versions {
		var nodes []string
		for _, n := range v.Nodes {
			s := fmt.Sprintf("%s %d/%d L%d", n.Node, n.Ready, n.Desired, n.Healthy.Level)
			if n.Reason != "" {
				s += " (" + n.Reason + ")"
			}
			nodes = append(nodes, s)
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d %g%% L%d [%s]", v.Version, v.Ready, v.Desired, v.Percent, v.Healthy.Level, strings.Join(nodes, ", ")))
	}
	return strings.Join(parts, "; ")
}

func TestComputeStatus(t *testing.T) {
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	req := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{
		{Version: "v2", Image: "nginx:2", Replicas: intp(1)},
		{Version: "v1", Image: "nginx:1", Replicas: intp(3)},
	}}
	h1, h2 := specHash(req.Deployments[1]), specHash(req.Deployments[0]) // v1's, v2's
	up := func(name, hash string) container {
		return container{Name: name, SpecHash: hash, Status: "running", Running: true, StartedAt: now.Add(-time.Minute)}
	}
	// Placement over h1..h3: v2-0→h1, v1-0→h2, v1-1→h3, v1-2→h1.
	healthy := func() []hostView {
		return []hostView{
			{Name: "h1", Containers: []container{up("sc-web-v2-0", h2), up("sc-web-v1-2", h1)}},
			{Name: "h2", Containers: []container{up("sc-web-v1-0", h1)}},
			{Name: "h3", Containers: []container{up("sc-web-v1-1", h1)}},
		}
	}
	for _, tc := range []struct {
		name   string
		req    *model.ApplyRequest
		change func(v []hostView)
		want   string
	}{
		{name: "nothing desired", want: "level 0"},
		{
			name: "all ready", req: req,
			want: "level 100; v1 3/3 75% L100 [h1 1/1 L100, h2 1/1 L100, h3 1/1 L100]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
		{
			name: "one version crashing", req: req,
			change: func(v []hostView) {
				v[0].Containers[0] = container{Name: "sc-web-v2-0", SpecHash: h2, Status: "restarting", Running: true, Restarting: true, ExitCode: 1, RestartCount: 4, StartedAt: now}
			},
			want: "level 75; v1 3/3 75% L100 [h1 1/1 L100, h2 1/1 L100, h3 1/1 L100]; v2 0/1 25% L0 [h1 0/1 L0 (restarting, exit code 1, 4 restarts)]",
		},
		{
			name: "exited", req: req,
			change: func(v []hostView) {
				v[1].Containers[0] = container{Name: "sc-web-v1-0", SpecHash: h1, Status: "exited", ExitCode: 1, StartedAt: now.Add(-time.Hour)}
			},
			want: "level 75; v1 2/3 75% L66 [h1 1/1 L100, h2 0/1 L0 (exited with code 1), h3 1/1 L100]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
		{
			name: "too young", req: req,
			change: func(v []hostView) { v[2].Containers[0].StartedAt = now.Add(-time.Second) },
			want:   "level 75; v1 2/3 75% L66 [h1 1/1 L100, h2 1/1 L100, h3 0/1 L0 (running for less than 3s)]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
		{
			name: "unhealthy", req: req,
			change: func(v []hostView) { v[2].Containers[0].Health = "unhealthy" },
			want:   "level 75; v1 2/3 75% L66 [h1 1/1 L100, h2 1/1 L100, h3 0/1 L0 (health check unhealthy)]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
		{
			name: "wrong hash", req: req,
			change: func(v []hostView) { v[0].Containers[1].SpecHash = "0000000000000000" },
			want:   "level 75; v1 2/3 75% L66 [h1 0/1 L0 (runs an outdated spec), h2 1/1 L100, h3 1/1 L100]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
		{
			name: "missing", req: req,
			change: func(v []hostView) { v[2].Containers = nil },
			want:   "level 75; v1 2/3 75% L66 [h1 1/1 L100, h2 1/1 L100, h3 0/1 L0 (missing)]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
		{
			name: "unreachable host", req: req,
			change: func(v []hostView) {
				v[0].Down, v[0].Containers = "host unreachable: Unreachable: dial tcp: i/o timeout", nil
			},
			want: "level 50; v1 2/3 75% L66 [h1 0/1 L0 (host unreachable: Unreachable: dial tcp: i/o timeout), h2 1/1 L100, h3 1/1 L100]; " +
				"v2 0/1 25% L0 [h1 0/1 L0 (host unreachable: Unreachable: dial tcp: i/o timeout)]",
		},
		{
			name: "replica found on another host counts there",
			req:  req,
			change: func(v []hostView) {
				v[2].Containers = append(v[2].Containers, v[0].Containers[1])
				v[0].Containers = v[0].Containers[:1]
			},
			want: "level 100; v1 3/3 75% L100 [h2 1/1 L100, h3 2/2 L100]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
		{
			name: "of two copies the ready one counts",
			req:  req,
			change: func(v []hostView) {
				v[0].Containers[1].Running, v[0].Containers[1].Status = false, "exited"
				v[2].Containers = append(v[2].Containers, up("sc-web-v1-2", h1))
			},
			want: "level 100; v1 3/3 75% L100 [h2 1/1 L100, h3 2/2 L100]; v2 1/1 25% L100 [h1 1/1 L100]",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := healthy()
			if tc.change != nil {
				tc.change(views)
			}
			st := computeStatus("web", tc.req, views, now, 3*time.Second)
			if st.App != "web" {
				t.Errorf("app %q", st.App)
			}
			if got := summary(st); got != tc.want {
				t.Errorf("status\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestGetApplicationStatus(t *testing.T) {
	ctx := context.Background()
	f := newFakeHosts("Reachable", "Reachable", "Reachable")
	var applied *model.ApplyRequest
	desired := func(app string) (*model.ApplyRequest, bool) { return applied, applied != nil && app == applied.App }
	op := New(testEnv, f, desired, Options{Clock: func() time.Time { return f.now }})

	st, err := op.GetApplicationStatus(ctx, "web")
	if err != nil || !reflect.DeepEqual(st, &model.ApplicationStatus{App: "web", Versions: []model.VersionStatus{}}) {
		t.Fatalf("nothing applied: %+v, %v", st, err)
	}

	applied = &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{
		{Version: "v1", Image: "nginx:1", Replicas: intp(3)}, {Version: "v2", Image: "nginx:2", Replicas: intp(1)}}}
	if _, err := op.Apply(ctx, applied); err != nil {
		t.Fatal(err)
	}
	f.docker["h2"]["sc-web-v1-1"].running, f.docker["h2"]["sc-web-v1-1"].exit = false, 137
	f.members[2].Status, f.members[2].Reason = "Unreachable", "dial tcp: i/o timeout"
	f.fail = func(host string, argv []string) error {
		if host == "h1" && argv[1] == "inspect" {
			return exitError(argv, "Error: No such object: x") // a partial answer
		}
		return nil
	}
	st, err = op.GetApplicationStatus(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	got := summary(st)
	if !strings.HasPrefix(got, "level 0; v1 0/3 75% L0 [h1 0/1 L0 (cannot list containers: docker inspect on host h1: ") || !strings.Contains(got, "No such object") {
		t.Errorf("docker inspect failing on h1: status %s", got)
	}

	// h1 stops answering before its probes mark it unreachable.
	f.fail = func(host string, argv []string) error {
		if host == "h1" {
			return &transport.NodeError{Node: host, Address: "10.0.0.1:22", Op: "connect", Err: transport.ErrUnreachable}
		}
		return nil
	}
	st, err = op.GetApplicationStatus(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(st); !strings.HasPrefix(got, "level 0; v1 0/3 75% L0 [h1 0/1 L0 (host unreachable: host h1: ssh h1 (10.0.0.1:22): connect: node unreachable)") {
		t.Errorf("h1 unreachable: status %s", got)
	}

	// Docker answers on h1; h2's v1-1 exited; h3 is unreachable.
	f.fail = nil
	st, err = op.GetApplicationStatus(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	want := "level 50; v1 1/3 75% L33 [h1 1/1 L100, h2 0/1 L0 (exited with code 137), h3 0/1 L0 (host unreachable: Unreachable: dial tcp: i/o timeout)]; v2 1/1 25% L100 [h1 1/1 L100]"
	if got := summary(st); got != want {
		t.Errorf("status\n got %s\nwant %s", got, want)
	}

	// A container removed between docker ps and docker inspect.
	f.fail = func(host string, argv []string) error {
		if host == "h1" && argv[1] == "inspect" {
			delete(f.docker["h1"], "sc-web-v2-0")
		}
		return nil
	}
	st, err = op.GetApplicationStatus(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	want = "level 25; v1 1/3 75% L33 [h1 1/1 L100, h2 0/1 L0 (exited with code 137), h3 0/1 L0 (host unreachable: Unreachable: dial tcp: i/o timeout)]; v2 0/1 25% L0 [h1 0/1 L0 (missing)]"
	if got := summary(st); got != want {
		t.Errorf("status\n got %s\nwant %s", got, want)
	}
}
