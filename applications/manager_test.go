package applications

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// fakeOperator steers what an environment answers, inside this package's
// tests only: the real operators are exercised end to end.
type fakeOperator struct {
	mu        sync.Mutex
	applies   []*model.ApplyRequest
	tries     int
	applyErr  error
	level     int
	statusErr error
	uninstErr error
	uninstall int
}

func (f *fakeOperator) Apply(_ context.Context, req *model.ApplyRequest) (*model.ApplyResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if f.applyErr != nil {
		return nil, f.applyErr
	}
	f.applies = append(f.applies, req)
	return &model.ApplyResponse{Success: true, Message: "ok"}, nil
}

func (f *fakeOperator) GetApplicationStatus(_ context.Context, app string) (*model.ApplicationStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	v1Ready := 0
	if f.level > 0 {
		v1Ready = 3
	}
	return &model.ApplicationStatus{App: app, Healthy: model.HealthInfo{Level: f.level}, Versions: []model.VersionStatus{
		{Version: "v1", Desired: 3, Ready: v1Ready, Healthy: model.HealthInfo{Level: model.Level(v1Ready, 3)}},
		{Version: "v2", Desired: 1, Ready: f.level / 100, Healthy: model.HealthInfo{Level: f.level / 100 * 100},
			Nodes: []model.NodeStatus{{Node: "host2", Desired: 1, Ready: f.level / 100, Healthy: model.HealthInfo{Level: f.level}, Reason: "CrashLoopBackOff"}}},
	}}, nil
}

func (f *fakeOperator) Uninstall(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uninstall++
	return f.uninstErr
}

func (f *fakeOperator) HealthCheck(context.Context) error { return nil }
func (f *fakeOperator) GetType() string                   { return model.EnvironmentKubernetes }

func (f *fakeOperator) set(fn func(f *fakeOperator)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeOperator) applied() []*model.ApplyRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*model.ApplyRequest(nil), f.applies...)
}

type fakeClusters struct {
	mu    sync.Mutex
	ready map[string]bool
}

func (c *fakeClusters) ClusterState(name string) (bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ready, ok := c.ready[name]
	return ok, ready
}

func (c *fakeClusters) ReadyClusters() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n, r := range c.ready {
		if r {
			out = append(out, n)
		}
	}
	return out
}

func (c *fakeClusters) remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ready, name)
}

type harness struct {
	t     *testing.T
	store storage.Store
	clk   *testingclock.FakeClock
	op    *fakeOperator
	bus   *pubsub.Bus
	cls   *fakeClusters
	m     *Manager
	stop  func()
}

func newHarness(t *testing.T, store storage.Store, op *fakeOperator) *harness {
	t.Helper()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	bus := pubsub.New(pubsub.Options{})
	t.Cleanup(bus.Close)
	reg := operators.NewRegistry(operators.Factory{
		model.EnvironmentKubernetes: func(model.Environment, operators.Desired) (operators.Operator, error) { return op, nil },
	})
	cls := &fakeClusters{ready: map[string]bool{"c1": true}}
	m, err := New(Options{Store: store, Bus: bus, Operators: reg, Clock: clk, Workers: 2, Clusters: cls})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	h := &harness{t: t, store: store, clk: clk, op: op, bus: bus, cls: cls, m: m}
	h.stop = func() { cancel(); <-done }
	t.Cleanup(h.stop)
	return h
}

// waitPhase steps the fake clock by the poll interval until app is in
// want, bounded by real time so that a broken handler fails the test.
func (h *harness) waitPhase(app string, want Phase) Instance {
	h.t.Helper()
	bound := time.Now().Add(10 * time.Second)
	for {
		got, err := h.m.Get("c1", app)
		if err == nil && got.Phase == want {
			return got
		}
		if time.Now().After(bound) {
			h.t.Fatalf("%s is %s (%v), want %s", app, got.Phase, err, want)
		}
		h.clk.Step(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
}

func spec(image string) model.ApplicationSpec {
	three, one := 3, 1
	return model.ApplicationSpec{Version: "v1", Deployments: []model.VersionDeployment{
		{Version: "v1", Image: image, Replicas: &three}, {Version: "v2", Image: image, Replicas: &one}}}
}

func TestInstallReachesInstalledAndAnnouncesEveryPhase(t *testing.T) {
	op := &fakeOperator{level: 100}
	h := newHarness(t, storagetest.Open(t), op)
	sub := h.bus.Subscribe()
	defer sub.Close()
	inst, err := h.m.Apply(context.Background(), "admin", "c1", "web", spec("busybox:1"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Phase != PhaseWaiting || inst.Generation != 1 || inst.UpdatedBy != "admin" {
		t.Fatalf("after apply: %+v", inst)
	}
	got := h.waitPhase("web", PhaseInstalled)
	if got.InstalledHash != got.SpecHash {
		t.Errorf("installed hash %q, spec hash %q", got.InstalledHash, got.SpecHash)
	}
	if a := op.applied(); len(a) != 1 || *a[0].Deployments[0].Replicas != 3 || a[0].SpecHash != got.SpecHash {
		t.Errorf("applies: %+v", a)
	}
	var phases []string
	for len(phases) < 3 {
		select {
		case e := <-sub.C():
			if e.Kind == pubsub.ApplicationPhaseChanged && e.Application == "web" {
				phases = append(phases, e.Status)
				if e.Cluster != "c1" || e.Environment != "c1" {
					t.Errorf("event %+v: want cluster and environment c1", e)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("events so far: %v", phases)
		}
	}
	if strings.Join(phases, ",") != "Waiting,Installing,Installed" {
		t.Errorf("phases announced: %v", phases)
	}
	lines, err := h.m.Log("c1", "web", 0)
	if err != nil || len(lines) < 4 {
		t.Fatalf("log: %v %v", lines, err)
	}
	if !strings.Contains(lines[0].Message, "apply: (new) → Waiting by admin") {
		t.Errorf("first log line %q", lines[0].Message)
	}
	// The same spec again changes nothing.
	again, err := h.m.Apply(context.Background(), "admin", "c1", "web", spec("busybox:1"))
	if err != nil || again.Phase != PhaseInstalled || again.Generation != 1 {
		t.Errorf("same spec again: %+v %v", again, err)
	}
}

func TestInstallFailsAtItsBoundNamingVersionAndNode(t *testing.T) {
	op := &fakeOperator{level: 75}
	h := newHarness(t, storagetest.Open(t), op)
	s := spec("busybox:1")
	s.InstallTimeoutSeconds = 30
	if _, err := h.m.Apply(context.Background(), "admin", "c1", "web", s); err != nil {
		t.Fatal(err)
	}
	got := h.waitPhase("web", PhaseFailed)
	for _, want := range []string{"within 30s", "level 75", "version v2 0/1", "node host2", "CrashLoopBackOff"} {
		if !strings.Contains(got.Message, want) {
			t.Errorf("failure message %q lacks %q", got.Message, want)
		}
	}
	// A retry installs again and applies again.
	op.set(func(f *fakeOperator) { f.level = 100 })
	if _, err := h.m.Retry(context.Background(), "admin", "c1", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("web", PhaseInstalled)
	if n := len(op.applied()); n != 2 {
		t.Errorf("%d applies, want 2 (the retry applies again)", n)
	}
}

func TestChangedSpecGoesBackToWaitingAndUninstallPurges(t *testing.T) {
	op := &fakeOperator{level: 100}
	h := newHarness(t, storagetest.Open(t), op)
	ctx := context.Background()
	first, _ := h.m.Apply(ctx, "admin", "c1", "web", spec("busybox:1"))
	h.waitPhase("web", PhaseInstalled)
	changed, err := h.m.Apply(ctx, "admin", "c1", "web", spec("busybox:2"))
	if err != nil || changed.Phase != PhaseWaiting || changed.Generation != 2 || changed.SpecHash == first.SpecHash {
		t.Fatalf("changed spec: %+v %v", changed, err)
	}
	got := h.waitPhase("web", PhaseInstalled)
	if a := op.applied(); len(a) != 2 || a[1].Deployments[0].Image != "busybox:2" || got.InstalledHash != changed.SpecHash {
		t.Errorf("applies %d, installed hash %s", len(a), got.InstalledHash)
	}
	if _, _, err := h.m.Uninstall(ctx, "admin", "c1", "web"); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("web", PhaseUninstalled)
	if _, err := h.m.Apply(ctx, "admin", "c1", "other", spec("busybox:1")); err != nil {
		t.Fatal(err)
	}
	if _, purged, err := h.m.Uninstall(ctx, "admin", "c1", "web"); err != nil || !purged {
		t.Fatalf("delete of an Uninstalled instance: purged %v, %v", purged, err)
	}
	if _, err := h.m.Get("c1", "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after purge: %v", err)
	}
	if kvs, _ := h.store.ListPrefix(storage.BucketApplicationLogs, logPrefix("c1", "web")); len(kvs) != 0 {
		t.Errorf("%d log lines left after purge", len(kvs))
	}
}

func TestRestartMidInstallConverges(t *testing.T) {
	store := storagetest.Open(t)
	op := &fakeOperator{level: 0}
	h := newHarness(t, store, op)
	if _, err := h.m.Apply(context.Background(), "admin", "c1", "web", spec("busybox:1")); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("web", PhaseInstalling)
	for len(op.applied()) == 0 {
		h.clk.Step(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	h.stop()
	op.set(func(f *fakeOperator) { f.level = 100 })
	h2 := newHarness(t, store, op)
	h2.waitPhase("web", PhaseInstalled)
	if n := len(op.applied()); n != 2 {
		t.Errorf("%d applies, want 2: the restarted manager applies again", n)
	}
}

func TestEnvironmentTroubleWaitsThenFails(t *testing.T) {
	op := &fakeOperator{level: 100, applyErr: fmt.Errorf("cluster c1 is Updating: %w", operators.ErrEnvironmentNotReady)}
	h := newHarness(t, storagetest.Open(t), op)
	s := spec("busybox:1")
	s.InstallTimeoutSeconds = 60
	if _, err := h.m.Apply(context.Background(), "admin", "c1", "web", s); err != nil {
		t.Fatal(err)
	}
	inst := h.waitPhase("web", PhaseInstalling)
	for inst.Progress == "" {
		inst, _ = h.m.Get("c1", "web")
		time.Sleep(2 * time.Millisecond)
	}
	if !strings.Contains(inst.Progress, "waiting: cluster c1 is Updating") {
		t.Errorf("progress %q", inst.Progress)
	}
	got := h.waitPhase("web", PhaseFailed)
	if !strings.Contains(got.Message, "Updating") {
		t.Errorf("failure %q", got.Message)
	}
}

func TestUninstallRetriesThenFails(t *testing.T) {
	op := &fakeOperator{level: 100}
	h := newHarness(t, storagetest.Open(t), op)
	ctx := context.Background()
	h.m.Apply(ctx, "admin", "c1", "web", spec("busybox:1"))
	h.waitPhase("web", PhaseInstalled)
	op.set(func(f *fakeOperator) { f.uninstErr = errors.New("host h1 unreachable") })
	if _, _, err := h.m.Uninstall(ctx, "admin", "c1", "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Apply(ctx, "admin", "c1", "web", spec("busybox:3")); !errors.Is(err, ErrConflict) {
		t.Errorf("apply while Uninstalling: %v, want a conflict", err)
	}
	for range 700 {
		h.clk.Step(time.Second)
		time.Sleep(time.Millisecond)
		if got, _ := h.m.Get("c1", "web"); got.Phase == PhaseFailed {
			break
		}
	}
	got := h.waitPhase("web", PhaseFailed)
	if !strings.Contains(got.Message, "host h1 unreachable") {
		t.Errorf("failure %q", got.Message)
	}
}

func TestEnvironmentsOfHosts(t *testing.T) {
	h := newHarness(t, storagetest.Open(t), &fakeOperator{level: 100})
	ctx := context.Background()
	if _, err := h.m.CreateEnvironment(ctx, "admin", model.Environment{Name: "c1", Kind: model.EnvironmentHosts, Selector: "a=b"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("an environment named like a cluster: %v", err)
	}
	if _, err := h.m.CreateEnvironment(ctx, "admin", model.Environment{Name: "web", Kind: model.EnvironmentHosts, Selector: "group=web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.CreateEnvironment(ctx, "admin", model.Environment{Name: "web", Kind: model.EnvironmentHosts, Selector: "group=x"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("a duplicate: %v", err)
	}
	envs := h.m.Environments()
	if len(envs) != 2 || envs[0].Name != "c1" || envs[0].Kind != model.EnvironmentKubernetes || envs[1].Selector != "group=web" {
		t.Errorf("environments: %+v", envs)
	}
	if err := h.m.DeleteEnvironment(ctx, "admin", "c1"); !errors.Is(err, ErrConflict) {
		t.Errorf("deleting a cluster's environment: %v", err)
	}
	if err := h.m.DeleteEnvironment(ctx, "admin", "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.m.Environment("web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

func TestPhaseTable(t *testing.T) {
	for _, tc := range []struct {
		from Phase
		ev   event
		to   Phase
		ok   bool
	}{
		{PhaseNone, evApply, PhaseWaiting, true},
		{PhaseInstalled, evApply, PhaseWaiting, true},
		{PhaseUninstalling, evApply, "", false},
		{PhaseWaiting, evInstall, PhaseInstalling, true},
		{PhaseInstalled, evInstall, "", false},
		{PhaseInstalling, evInstallFailed, PhaseFailed, true},
		{PhaseUninstalling, evInstallFailed, "", false},
		{PhaseUninstalling, evUninstallFailed, PhaseFailed, true},
		{PhaseUninstalled, evUninstall, "", false},
		{PhaseFailed, evRetry, PhaseWaiting, true},
		{PhaseInstalled, evRetry, "", false},
	} {
		to, ok := can(tc.from, tc.ev)
		if ok != tc.ok || to != tc.to {
			t.Errorf("%s on %q: %q %v, want %q %v", tc.ev, tc.from, to, ok, tc.to, tc.ok)
		}
	}
}

func TestPercentReplicas(t *testing.T) {
	pct := func(p float64) *float64 { return &p }
	two := 2
	for _, tc := range []struct {
		total int
		deps  []model.VersionDeployment
		want  []int
	}{
		{10, []model.VersionDeployment{{Percent: pct(90)}, {Percent: pct(10)}}, []int{9, 1}},
		{3, []model.VersionDeployment{{Percent: pct(50)}, {Percent: pct(50)}}, []int{2, 1}},
		{7, []model.VersionDeployment{{Percent: pct(33.3)}, {Percent: pct(33.3)}, {Percent: pct(33.4)}}, []int{2, 2, 3}},
		{4, []model.VersionDeployment{{Replicas: &two}, {Percent: pct(25)}}, []int{2, 1}},
		{0, []model.VersionDeployment{{Percent: pct(0)}}, []int{0}},
	} {
		req := applyRequest("a", model.ApplicationSpec{Replicas: tc.total, Deployments: tc.deps}, "h")
		var got []int
		for _, d := range req.Deployments {
			got = append(got, *d.Replicas)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("total %d: %v, want %v", tc.total, got, tc.want)
		}
	}
}

func TestFollowLogStreamsUntilSettled(t *testing.T) {
	op := &fakeOperator{level: 0}
	h := newHarness(t, storagetest.Open(t), op)
	if _, err := h.m.Apply(context.Background(), "admin", "c1", "web", spec("busybox:1")); err != nil {
		t.Fatal(err)
	}
	lines, live, stop, err := h.m.FollowLog("c1", "web", 0)
	if err != nil || live == nil {
		t.Fatalf("follow: %v %v", live, err)
	}
	defer stop()
	if len(lines) == 0 || lines[0].Seq != 1 {
		t.Fatalf("the lines so far: %+v", lines)
	}
	last := lines[len(lines)-1].Seq
	op.set(func(f *fakeOperator) { f.level = 100 })
	var got []LogLine
	bound := time.After(10 * time.Second)
	for open := true; open; {
		select {
		case l, ok := <-live:
			if !ok {
				open = false
				break
			}
			got = append(got, l)
		case <-bound:
			t.Fatalf("the live log did not end; got %+v", got)
		case <-time.After(2 * time.Millisecond):
			h.clk.Step(time.Second)
		}
	}
	for _, l := range got {
		if l.Seq != last+1 {
			t.Fatalf("line %d after %d: a gap or a repeat in %+v", l.Seq, last, got)
		}
		last = l.Seq
	}
	if end := got[len(got)-1]; end.Phase != PhaseInstalled {
		t.Errorf("the live log ended with %+v, want the Installed line", end)
	}
	// A settled instance gives its lines and no live channel.
	all, live, stop2, err := h.m.FollowLog("c1", "web", 2)
	defer stop2()
	if err != nil || live != nil || all[0].Seq != 3 || all[len(all)-1].Seq != last {
		t.Errorf("follow a settled instance from 2: %d lines, live %v, %v", len(all), live, err)
	}
}

func TestRefusedApplyFailsAtOnce(t *testing.T) {
	op := &fakeOperator{level: 100, applyErr: fmt.Errorf("deployment default/web-v1 exists and is not managed by singlecloud: %w", operators.ErrRefused)}
	h := newHarness(t, storagetest.Open(t), op)
	if _, err := h.m.Apply(context.Background(), "admin", "c1", "web", spec("busybox:1")); err != nil {
		t.Fatal(err)
	}
	got := h.waitPhase("web", PhaseFailed)
	op.mu.Lock()
	tries := op.tries
	op.mu.Unlock()
	if !strings.Contains(got.Message, "not managed by singlecloud") || tries != 1 {
		t.Errorf("a refused apply: %q after %d tries, want a failure at the first", got.Message, tries)
	}
}

// A deleted cluster takes its instances: their rows go inside the
// cluster's delete transaction (which takes no lock of the manager, so an
// environment created meanwhile cannot deadlock with it), they leave memory
// when the deletion is announced, and a late write of a handler that still
// holds one does not bring it back.
func TestClusterDeleteTakesItsInstances(t *testing.T) {
	op := &fakeOperator{level: 100}
	h := newHarness(t, storagetest.Open(t), op)
	ctx := context.Background()
	if _, err := h.m.Apply(ctx, "admin", "c1", "web", spec("busybox:1")); err != nil {
		t.Fatal(err)
	}
	h.waitPhase("web", PhaseInstalled)
	held, err := h.m.lookup("c1", "web")
	if err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	err = h.store.Update(func(tx storage.Tx) error {
		go func() {
			_, err := h.m.CreateEnvironment(ctx, "admin", model.Environment{Name: "edge", Kind: model.EnvironmentHosts, Selector: "a=b"})
			created <- err
		}()
		return DropClusterInstances(tx, "c1")
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-created:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an environment created during a cluster's delete never finished")
	}
	h.cls.remove("c1")
	h.bus.Publish(pubsub.Event{Kind: pubsub.ClusterDeleted, Cluster: "c1"})
	bound := time.Now().Add(10 * time.Second)
	for {
		if _, err := h.m.Get("c1", "web"); errors.Is(err, ErrNotFound) {
			break
		}
		if time.Now().After(bound) {
			t.Fatal("the deleted cluster's instance is still listed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.m.note("c1/web", held, "info", "a late line")
	if err := h.m.transition(ctx, "c1/web", held, evApply, change{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a late transition of a removed instance: %v", err)
	}
	if _, err := h.store.Get(storage.BucketApplications, "c1/web"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a late write brought the instance back: %v", err)
	}
}

// A purge checks the stored phase in its transaction, and a writer that
// read the instance before the purge cannot store it again.
func TestPurgeAndAStaleWriter(t *testing.T) {
	h := newHarness(t, storagetest.Open(t), &fakeOperator{level: 100})
	ctx := context.Background()
	h.m.Apply(ctx, "admin", "c1", "web", spec("busybox:1"))
	h.waitPhase("web", PhaseInstalled)
	if _, purged, err := h.m.Uninstall(ctx, "admin", "c1", "web"); err != nil || purged {
		t.Fatalf("first delete: purged %v, %v", purged, err)
	}
	h.waitPhase("web", PhaseUninstalled)
	held, _ := h.m.lookup("c1", "web")
	if _, purged, err := h.m.Uninstall(ctx, "admin", "c1", "web"); err != nil || !purged {
		t.Fatalf("delete of an Uninstalled instance: purged %v, %v", purged, err)
	}
	err := h.m.transition(ctx, "c1/web", held, evApply, change{edit: func(r *record) { r.Generation++ }})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("a stale apply after the purge: %v, want refused", err)
	}
	if kvs, _ := h.store.List(storage.BucketApplications); len(kvs) != 0 {
		t.Errorf("%d instances stored after a purge and a stale write", len(kvs))
	}
	// An apply whose FSM refuses the spec says so.
	h.m.Apply(ctx, "admin", "c1", "api", spec("busybox:1"))
	h.waitPhase("api", PhaseInstalled)
	op := h.op
	op.set(func(f *fakeOperator) { f.uninstErr = errors.New("slow") })
	h.m.Uninstall(ctx, "admin", "c1", "api")
	if _, err := h.m.Apply(ctx, "admin", "c1", "api", spec("busybox:1")); !errors.Is(err, ErrConflict) {
		t.Errorf("the same spec while Uninstalling: %v, want a conflict", err)
	}
}

func TestAgainstDesired(t *testing.T) {
	three, one := 3, 1
	req := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{{Version: "v1", Replicas: &three}, {Version: "v2", Replicas: &one}}}
	for _, tc := range []struct {
		name   string
		st     model.ApplicationStatus
		level  int
		levels string
	}{
		{"all there", model.ApplicationStatus{Versions: []model.VersionStatus{{Version: "v1", Ready: 3}, {Version: "v2", Ready: 1}}}, 100, "v1:100:75 v2:100:25"},
		{"v2 deleted by hand", model.ApplicationStatus{Healthy: model.HealthInfo{Level: 100}, Versions: []model.VersionStatus{{Version: "v1", Ready: 3}}}, 75, "v1:100:75 v2:0:25"},
		{"an old version being pruned", model.ApplicationStatus{Versions: []model.VersionStatus{{Version: "v0", Ready: 5}, {Version: "v1", Ready: 1}, {Version: "v2", Ready: 1}}}, 50, "v1:33:75 v2:100:25"},
		{"more ready than desired", model.ApplicationStatus{Versions: []model.VersionStatus{{Version: "v1", Ready: 4}, {Version: "v2", Ready: 1}}}, 100, "v1:100:75 v2:100:25"},
	} {
		got := againstDesired(&tc.st, req)
		var parts []string
		for _, v := range got.Versions {
			parts = append(parts, fmt.Sprintf("%s:%d:%v", v.Version, v.Healthy.Level, v.Percent))
		}
		if got.Healthy.Level != tc.level || strings.Join(parts, " ") != tc.levels {
			t.Errorf("%s: level %d %v, want %d %s", tc.name, got.Healthy.Level, parts, tc.level, tc.levels)
		}
	}
}
