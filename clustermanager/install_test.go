package clustermanager

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// stepInstaller steers the manager's install flows: it reports steps,
// checkpoints them, and can block, fail or succeed on command. Real
// installs run in test/e2e.
type stepInstaller struct {
	kubeconfig string
	block      chan struct{} // a step waits on it when non-nil
	// blocked, when non-nil, is closed when a run first waits on block:
	// connect and certificates are then checkpointed and etcd (3/4) is
	// reported as the running step.
	blocked     chan struct{}
	blockedOnce sync.Once
	failStep    string
	// creates, when set, replaces the releases Create installs: those
	// of an earlier build.
	creates []string
	// failKubeconfig, when set, is the admin kubeconfig a failing run
	// leaves in its state (one it wrote before it failed).
	failKubeconfig string
	removeErr      error
	// withPKI leaves a (empty) PKI in the state: the cluster then
	// counts as one whose etcd singlecloud can snapshot.
	withPKI bool
	// snapshot is what Snapshot streams; snapshotErr fails it.
	snapshot    []byte
	snapshotErr error
	// snapshotBlock, when set, holds a snapshot in flight: Snapshot
	// sends on it, then waits for a receive from it (or its ctx).
	snapshotBlock chan struct{}

	mu       sync.Mutex
	restored []restoredSnapshot
	calls    []string
	prevs    []zke.State
	removed  int
}

func (f *stepInstaller) run(ctx context.Context, op string, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error) {
	f.mu.Lock()
	f.calls = append(f.calls, op)
	f.prevs = append(f.prevs, prev.Clone())
	block := f.block
	f.mu.Unlock()
	st := prev.Clone()
	st.PKI = nil
	if f.withPKI {
		// An empty bundle: enough for the manager to see an installed
		// cluster whose etcd it can reach (snapshots, restores).
		st.PKI = &pki.Bundle{}
	}
	if st.HostKeys == nil {
		st.HostKeys = map[string]string{"10.0.0.1": "ssh-ed25519 AAAA"}
	}
	steps := []string{"connect", "certificates", "etcd", "kubeconfig"}
	for i, s := range steps {
		sink.Progress(workflow.Progress{Step: s, Index: i + 1, Total: len(steps), Percent: 100 * i / len(steps)})
		sink.Log(workflow.Line{Time: time.Now(), Level: "info", Step: s, Message: s + " running"})
		if s == "etcd" && block != nil {
			if f.blocked != nil {
				f.blockedOnce.Do(func() { close(f.blocked) })
			}
			select {
			case <-block:
			case <-ctx.Done():
				return st, ctx.Err()
			}
		}
		if s == f.failStep {
			if f.failKubeconfig != "" {
				st.Kubeconfig = []byte(f.failKubeconfig)
			}
			return st, &workflow.StepError{Step: s, Index: i + 1, Err: workflow.UserFixable(&workflow.NodeError{Node: "n2", Err: errors.New("port 2379 in use")})}
		}
		st.Checkpoints = append(st.Checkpoints, s)
		if err := sink.Checkpoint(ctx, s, st); err != nil {
			return st, err
		}
	}
	st.Kubeconfig = []byte(f.kubeconfig)
	applied := cfg
	applied.SSHKey = ""
	st.Applied = &applied
	return st, nil
}

func (f *stepInstaller) Create(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error) {
	return f.run(ctx, "create", cfg, prev, sink)
}

func (f *stepInstaller) Update(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error) {
	return f.run(ctx, "update", cfg, prev, sink)
}

func (f *stepInstaller) RotateCertificates(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error) {
	st, err := f.run(ctx, "rotate", cfg, prev, sink)
	if err == nil {
		// As zke: a finished rotation ends the CA rotation it carried.
		st.CAPhase = ""
	}
	return st, err
}

// Snapshot hands f.snapshot (a real etcd snapshot the test made) to
// save, or fails with f.snapshotErr.
func (f *stepInstaller) Snapshot(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink, save zke.SaveSnapshot) error {
	f.mu.Lock()
	f.calls = append(f.calls, "snapshot")
	data, err, block := f.snapshot, f.snapshotErr, f.snapshotBlock
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if block != nil {
		select { // tell the test the snapshot is in flight
		case block <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return save(ctx, "n1", bytes.NewReader(data))
}

// Restore reads the snapshot the manager opens for it (kept in restored)
// and runs its steps like the other operations.
func (f *stepInstaller) Restore(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink, snapshot string, open zke.OpenSnapshot) (zke.State, error) {
	rc, err := open(ctx)
	if err != nil {
		return prev, err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return prev, err
	}
	f.mu.Lock()
	f.restored = append(f.restored, restoredSnapshot{id: snapshot, data: data})
	f.mu.Unlock()
	return f.run(ctx, "restore", cfg, prev, sink)
}

// restoredSnapshot is a snapshot the fake restored.
type restoredSnapshot struct {
	id   string
	data []byte
}

func (f *stepInstaller) Upgrade(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink) (zke.State, error) {
	return f.run(ctx, "upgrade", cfg, prev, sink)
}

func (f *stepInstaller) Remove(ctx context.Context, cfg model.ClusterConfig, prev zke.State, sink zke.Sink, force bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "remove")
	if f.removeErr != nil && !force {
		return f.removeErr
	}
	f.removed++
	return nil
}

func (f *stepInstaller) KubernetesVersions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.creates != nil {
		return f.creates
	}
	return []string{"v1.36.3", model.DefaultKubernetesVersion}
}

func (f *stepInstaller) KeptVersions() []string { return []string{"v1.35.4"} }

// lastPrev is the state the installer was last handed.
func (f *stepInstaller) lastPrev() zke.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.prevs) == 0 {
		return zke.State{}
	}
	return f.prevs[len(f.prevs)-1].Clone()
}

func (f *stepInstaller) callList() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

func testKey(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

func createConfig(t *testing.T, name string) model.ClusterConfig {
	return model.ClusterConfig{
		Name: name, SSHUser: "root", SSHKey: testKey(t), SingleCloudAddress: "10.0.0.100:8080",
		Nodes: []model.Node{
			{Name: "n1", Address: "10.0.0.1", Roles: []model.Role{model.RoleControlPlane, model.RoleEtcd}},
			{Name: "n2", Address: "10.0.0.2", Roles: []model.Role{model.RoleWorker}},
		},
		Network: model.Network{Plugin: model.PluginBridge},
	}
}

func newInstallHarness(t *testing.T, store *storage.Bolt, inst *stepInstaller) *harness {
	t.Helper()
	if store == nil {
		store = storagetest.Open(t)
	}
	return newHarnessWith(t, store, func(o *Options) { o.Installer = inst })
}

// frames returns the whole log of the cluster's finished operation. The
// manager announces an operation's last transition a moment before it
// appends the result frame (issue 9's work queue will publish a state only
// once its worker is done), so a log still live is followed until the
// result closes it (bounded); then the log must be finished.
func frames(t *testing.T, m *Manager, name string) []Frame {
	t.Helper()
	fs, ch, stop, err := m.FollowLog(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ch != nil {
		timeout := time.NewTimer(10 * time.Second)
		defer timeout.Stop()
	follow:
		for {
			select {
			case f, ok := <-ch:
				if !ok {
					break follow
				}
				fs = append(fs, f)
			case <-timeout.C:
				stop()
				t.Fatalf("the log of %s did not end within 10s: %+v", name, fs)
			}
		}
	}
	stop()
	_, ch, stop, err = m.FollowLog(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if ch != nil {
		t.Fatalf("FollowLog of a finished operation returned a live channel")
	}
	return fs
}

func TestCreateRunsInstallerAndKeepsTheLog(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	cfg := createConfig(t, "made")
	c, err := h.m.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != fsm.StateCreating || c.Config == nil || c.Config.SSHKey != "" {
		t.Fatalf("create answered %+v", c)
	}
	c = h.waitStatus("made", fsm.StateRunning, 10*time.Second)
	if c.LastOperation.Type != OpCreate || c.LastOperation.State != OpSucceeded || c.Version != "v1.36.3" {
		t.Errorf("after create: %+v %+v", c, c.LastOperation)
	}
	kc, err := h.m.Kubeconfig("made")
	if err != nil || string(kc) != api.kubeconfig() {
		t.Errorf("kubeconfig of a created cluster: %v", err)
	}
	fs := frames(t, h.m, "made")
	if len(fs) < 9 || fs[len(fs)-1].Type != FrameResult || fs[len(fs)-1].Status != "Running" {
		t.Fatalf("log %+v", fs)
	}
	for i, f := range fs {
		if f.Seq != uint64(i+1) {
			t.Fatalf("frame %d has seq %d", i, f.Seq)
		}
	}
	rec, err := h.storedStatus("made")
	if err != nil || rec.secrets.SSHKey != strings.TrimSpace(cfg.SSHKey) || rec.secrets.ZKE == nil || rec.secrets.ZKE.Applied == nil || len(rec.secrets.ZKE.Checkpoints) != 0 {
		t.Errorf("stored record of %s: status %s, key kept %v, installer state %v, applied %v, checkpoints %v (%v)", rec.Name, rec.Status,
			rec.secrets.SSHKey == strings.TrimSpace(cfg.SSHKey), rec.secrets.ZKE != nil, rec.secrets.ZKE != nil && rec.secrets.ZKE.Applied != nil, rec.secrets.ZKE != nil && len(rec.secrets.ZKE.Checkpoints) == 0, err)
	}
	raw, _ := h.store.Get(storage.BucketClusters, "made")
	if strings.Contains(string(raw), "PRIVATE KEY") || strings.Contains(string(raw), "hostKeys") {
		t.Error("secrets stored in clear text")
	}
}

func TestCreateFailureIsUnavailableWithTheStep(t *testing.T) {
	inst := &stepInstaller{failStep: "etcd"}
	h := newInstallHarness(t, nil, inst)
	if _, err := h.m.Create(context.Background(), createConfig(t, "bad")); err != nil {
		t.Fatal(err)
	}
	c := h.waitStatus("bad", fsm.StateUnavailable, 10*time.Second)
	op := c.LastOperation
	if op.State != OpFailed || op.Error == nil || op.Error.Step != "etcd" || op.Error.Node != "n2" || !op.Error.UserFixable || !strings.Contains(c.Reason, "port 2379") {
		t.Errorf("failure recorded as %+v %+v (reason %q)", op, op.Error, c.Reason)
	}
	fs := frames(t, h.m, "bad")
	if last := fs[len(fs)-1]; last.Type != FrameResult || last.Status != "Unavailable" || last.Step != "etcd" {
		t.Errorf("last frame %+v", last)
	}
}

func TestCancelCreateThenRetryResumes(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig(), block: make(chan struct{}), blocked: make(chan struct{})}
	h := newInstallHarness(t, nil, inst)
	if _, err := h.m.Create(context.Background(), createConfig(t, "c")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, inst.blocked, "the create reaching etcd")
	if rec, err := h.storedStatus("c"); err != nil || rec.secrets.ZKE == nil || len(rec.secrets.ZKE.Checkpoints) != 2 {
		t.Fatalf("no checkpoint before etcd: %+v (err %v)", rec, err)
	}
	if _, err := h.m.Cancel(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	c := h.waitStatus("c", fsm.StateUnavailable, 5*time.Second)
	if c.LastOperation.State != OpCanceled {
		t.Errorf("after cancel: %+v", c.LastOperation)
	}
	inst.mu.Lock()
	inst.block = nil
	inst.mu.Unlock()
	if _, err := h.m.Retry(context.Background(), "c"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("c", fsm.StateRunning, 10*time.Second)
	if got := inst.callList(); got != "create,create" {
		t.Errorf("installer calls %s", got)
	}
	inst.mu.Lock()
	resumed := inst.prevs[1]
	inst.mu.Unlock()
	if strings.Join(resumed.Checkpoints, ",") != "connect,certificates" || resumed.HostKeys["10.0.0.1"] == "" {
		t.Errorf("retry resumed from %+v, want the cancelled run's checkpoints and host keys", resumed)
	}
}

func TestDeleteCreatedClusterCleansHosts(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig(), removeErr: errors.New("node n2 unreachable")}
	h := newInstallHarness(t, nil, inst)
	if _, err := h.m.Create(context.Background(), createConfig(t, "d")); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("d", fsm.StateRunning, 10*time.Second)
	if _, err := h.m.Delete(context.Background(), "d", false); err != nil {
		t.Fatal(err)
	}
	c := h.waitStatus("d", fsm.StateUnavailable, 5*time.Second)
	if !strings.Contains(c.Reason, "unreachable") || !strings.Contains(c.Reason, "force") {
		t.Errorf("failed delete reason %q", c.Reason)
	}
	if _, err := h.m.Delete(context.Background(), "d", true); err != nil {
		t.Fatal(err)
	}
	h.waitGone("d")
	if kvs, _ := h.store.ListPrefix(storage.BucketOperationLogs, "d/"); len(kvs) != 0 {
		t.Errorf("%d log rows left after delete", len(kvs))
	}
}

func TestReloadResumesInterruptedCreate(t *testing.T) {
	api := newAPIServer(t, "good")
	store := storagetest.Open(t)
	inst := &stepInstaller{kubeconfig: api.kubeconfig(), block: make(chan struct{}), blocked: make(chan struct{})}
	h := newInstallHarness(t, store, inst)
	if _, err := h.m.Create(context.Background(), createConfig(t, "r")); err != nil {
		t.Fatal(err)
	}
	waitDone(t, inst.blocked, "the create reaching etcd")
	h.stop() // singlecloud stops mid-install (the row says Creating)
	if rec, _ := h.storedStatus("r"); rec.Status != fsm.StateCreating {
		t.Fatalf("stored %s", rec.Status)
	}
	inst2 := &stepInstaller{kubeconfig: api.kubeconfig()}
	h2 := newInstallHarness(t, store, inst2)
	h2.waitStatus("r", fsm.StateRunning, 10*time.Second)
	if got := inst2.callList(); got != "create" {
		t.Errorf("after restart the installer ran %q", got)
	}
}

func TestSecretsAreWriteOnly(t *testing.T) {
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newInstallHarness(t, nil, inst)
	cfg := createConfig(t, "s")
	cfg.PrivateRegistries = []model.PrivateRegistry{{URL: "registry.example:5000", User: "u", Password: "hunter2-registry"}}
	c, err := h.m.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.SSHKey != "" || c.Config.PrivateRegistries[0].Password != "" {
		t.Error("create answer carries a secret")
	}
	h.waitStatus("s", fsm.StateRunning, 10*time.Second)
	raw, _ := h.store.Get(storage.BucketClusters, "s")
	if strings.Contains(string(raw), "hunter2-registry") {
		t.Error("registry password stored in clear text")
	}
	for _, v := range h.m.List(false) {
		if v.Config.PrivateRegistries[0].Password != "" {
			t.Error("list shows the registry password")
		}
	}
	// An update that does not send the secrets back keeps them.
	upd := cfg
	upd.SSHKey = ""
	upd.PrivateRegistries = []model.PrivateRegistry{{URL: "registry.example:5000", User: "u"}}
	if _, err := h.m.Update(context.Background(), "s", upd); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("s", fsm.StateRunning, 10*time.Second)
	e, _ := h.m.lookup("s")
	full := e.record().fullConfig()
	if full.SSHKey != strings.TrimSpace(cfg.SSHKey) || full.PrivateRegistries[0].Password != "hunter2-registry" {
		t.Error("update lost a write-only secret")
	}
	if _, err := h.m.Retry(context.Background(), "s"); !errors.Is(err, fsm.ErrInvalidTransition) {
		t.Errorf("retry of a Running cluster: %v, want ErrInvalidTransition", err)
	}
}

// An update that leaves the network or the release out keeps the
// cluster's: the defaults changed (bridge, then flannel; v1.36.3, then
// v1.37.2), the plugin cannot change, and an upgrade is asked for by name.
func TestUpdateWithoutNetworkOrVersionKeepsThem(t *testing.T) {
	api := newAPIServer(t, "good")
	h := newInstallHarness(t, nil, &stepInstaller{kubeconfig: api.kubeconfig()})
	cfg := createConfig(t, "lab")
	cfg.Network.Iface = "eth1"
	cfg.KubernetesVersion = "v1.36.3"
	if _, err := h.m.Create(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("lab", fsm.StateRunning, waitBound)
	cfg.Network = model.Network{}
	cfg.KubernetesVersion = ""
	cfg.Nodes[1].Labels = map[string]string{"a": "b"}
	c, err := h.m.Update(context.Background(), "lab", cfg)
	if err != nil {
		t.Fatalf("update without a network or a release: %v", err)
	}
	if c.Config == nil || c.Config.Network != (model.Network{Plugin: model.PluginBridge, Iface: "eth1"}) ||
		c.Config.KubernetesVersion != "v1.36.3" || c.LastOperation.Type != OpUpdate {
		t.Fatalf("after the update: %+v, %+v", c.Config, c.LastOperation)
	}
	h.waitStatus("lab", fsm.StateRunning, waitBound)
}
