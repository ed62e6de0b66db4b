package hosts

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/hosts/sysinfo"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// fakeProber answers probes as told, per host; it is a double for the SSH
// prober that steers failures inside this package's unit tests.
type fakeProber struct {
	mu     sync.Mutex
	down   map[string]bool
	noInfo bool
	// now stamps the information collected; nil is time.Now.
	now      func() time.Time
	probes   []string
	collects int
	keys     [][]byte
}

func (f *fakeProber) Probe(ctx context.Context, t Target, collect bool) (ProbeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probes = append(f.probes, t.Name)
	f.keys = append(f.keys, t.Key)
	if f.down[t.Name] {
		return ProbeResult{}, &transport.NodeError{Node: t.Name, Address: t.Address, Op: "connect", Err: errors.New("connection refused"), Hint: "check that sshd runs"}
	}
	res := ProbeResult{HostKey: "ssh-ed25519 AAAAfake"}
	if collect && f.noInfo {
		res.InfoError = errors.New("df timed out")
		return res, nil
	}
	if collect {
		f.collects++
		stamp := time.Now
		if f.now != nil {
			stamp = f.now
		}
		res.Info = &sysinfo.Info{Kernel: "6.1.0", Arch: "x86_64", CPUs: 2, CollectedAt: stamp()}
	}
	return res, nil
}

func (f *fakeProber) setDown(name string, down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down == nil {
		f.down = map[string]bool{}
	}
	f.down[name] = down
}

func testKey(t *testing.T) string {
	t.Helper()
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

// Registration validates and seals the key; a probe pins the host key
// and collects system information; hysteresis keeps one failed probe from
// flapping a reachable host; the record survives a reload from the same
// store.
func TestRegistryAndProbes(t *testing.T) {
	store := storagetest.Open(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	fp := &fakeProber{now: clock}
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Clock: clock, Prober: fp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := testKey(t)

	_, err = m.Create(ctx, model.HostSpec{Name: "Bad_Name", Address: "nope", Port: 70000, SSHKey: "x"})
	var verrs validation.Errors
	if !errors.As(err, &verrs) || strings.Join(verrs.Fields(), ",") != "name,address,port,sshKey" {
		t.Fatalf("bad registration: %v, want errors naming name, address, port and sshKey", err)
	}
	h, err := m.Create(ctx, model.HostSpec{Name: "h1", Address: "10.0.0.1", SSHKey: key, Labels: map[string]string{"rack": "a"}})
	if err != nil || h.Status != StatusUnknown || h.Port != 22 || h.User != "root" {
		t.Fatalf("create = %+v, %v", h, err)
	}
	if _, err := m.Create(ctx, model.HostSpec{Name: "h1", Address: "10.0.0.2", SSHKey: key}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("second h1 = %v, want ErrDuplicate", err)
	}
	raw, _ := store.Get("hosts", "h1")
	if strings.Contains(string(raw), "PRIVATE KEY") {
		t.Fatal("the SSH key is stored in the clear")
	}

	m.sweep(ctx, m.names())
	h, _ = m.Get("h1")
	if h.Status != StatusReachable || h.HostKey == "" || h.System == nil || h.System.Kernel != "6.1.0" {
		t.Fatalf("after a good probe: %+v", h)
	}
	if got := string(fp.keys[0]); got != key {
		t.Error("the prober was not handed the unsealed key")
	}
	m.sweep(ctx, m.names())
	if fp.collects != 1 {
		t.Errorf("system information collected %d times, want once (it is fresh)", fp.collects)
	}

	fp.setDown("h1", true)
	now = now.Add(time.Minute)
	m.sweep(ctx, m.names())
	if h, _ = m.Get("h1"); h.Status != StatusReachable {
		t.Fatalf("one failed probe made the host %s", h.Status)
	}
	now = now.Add(time.Minute)
	m.sweep(ctx, m.names())
	h, _ = m.Get("h1")
	if h.Status != StatusUnreachable || !strings.Contains(h.Reason, "connection refused") || h.Hint != "check that sshd runs" || !h.StatusSince.Equal(now) {
		t.Fatalf("after two failed probes: %+v", h)
	}

	reloaded, err := New(Options{Store: store, Sealer: store.Sealer(), Clock: clock, Prober: fp})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := reloaded.Get("h1"); r.Status != StatusUnreachable || r.HostKey != h.HostKey || r.System == nil {
		t.Errorf("reloaded host %+v, want what was stored", r)
	}

	fp.setDown("h1", false)
	m.sweep(ctx, m.names())
	if h, _ = m.Get("h1"); h.Status != StatusReachable || h.Reason != "" || fp.collects != 2 {
		t.Errorf("back: %+v (collects %d), want Reachable with fresh system information", h, fp.collects)
	}

	// An update without a key keeps it; a new address forgets the
	// pinned host key.
	h, err = m.Update(ctx, "h1", model.HostSpec{Address: "10.0.0.9"})
	if err != nil || h.HostKey != "" || h.Address != "10.0.0.9" {
		t.Fatalf("update = %+v, %v", h, err)
	}
	m.sweep(ctx, m.names())
	if got := string(fp.keys[len(fp.keys)-1]); got != key {
		t.Error("an update without a key lost the stored key")
	}
	if err := m.Delete(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get("h1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if rows, _ := store.List("hosts"); len(rows) != 0 {
		t.Errorf("%d rows left after delete", len(rows))
	}
}

// A newly registered host is probed at once by the running loop, which
// stops with its context.
func TestRunProbesANewHostAtOnce(t *testing.T) {
	store := storagetest.Open(t)
	fp := &fakeProber{}
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: fp, Probe: ProbeOptions{Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	if _, err := m.Create(ctx, model.HostSpec{Name: "h2", Address: "10.0.0.2", SSHKey: testKey(t)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		if h, _ := m.Get("h2"); h.Status == StatusReachable {
			break
		}
		select {
		case <-deadline:
			t.Fatal("a new host was not probed within 10 s")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
}

// A host that clusters use is not deleted, and the error names them;
// Resolve hands out the registration with its key.
func TestDeleteInUseAndResolve(t *testing.T) {
	store := storagetest.Open(t)
	users := []string{"prod"}
	// While Delete asks who uses the host, a create resolving it is
	// refused: it cannot slip in between the question and the delete.
	var m *Manager
	var resolvedDuringCheck error
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: &fakeProber{}, InUse: func(name string) []string {
		_, resolvedDuringCheck = m.Resolve(name)
		return users
	}})
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(t)
	ctx := context.Background()
	if _, err := m.Create(ctx, model.HostSpec{Name: "h1", Address: "10.0.0.1", User: "ops", SSHKey: key}); err != nil {
		t.Fatal(err)
	}
	if spec, err := m.Resolve("h1"); err != nil || spec.SSHKey != key || spec.User != "ops" || spec.Port != 22 {
		t.Errorf("Resolve = %+v, %v", spec, err)
	}
	if _, err := m.Resolve("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve of an unknown host = %v", err)
	}
	if err := m.Delete(ctx, "h1"); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "prod") {
		t.Fatalf("delete of a host in use = %v, want ErrInUse naming prod", err)
	}
	if !errors.Is(resolvedDuringCheck, ErrNotFound) {
		t.Errorf("Resolve during Delete's check = %v, want refused", resolvedDuringCheck)
	}
	if _, err := m.Resolve("h1"); err != nil {
		t.Errorf("Resolve after a refused Delete = %v, want the host back", err)
	}
	users = nil
	if err := m.Delete(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
}

// A host that logs in but whose information cannot be read is Reachable,
// its last information kept with why it is stale; a registration moved to
// another address starts over (nothing observed of the old one holds);
// a forgotten host key is pinned again by the next probe.
func TestInfoFailureMoveAndForgetHostKey(t *testing.T) {
	store := storagetest.Open(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	fp := &fakeProber{now: func() time.Time { return now }}
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Clock: func() time.Time { return now }, Prober: fp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.Create(ctx, model.HostSpec{Name: "h1", Address: "10.0.0.1", SSHKey: testKey(t)}); err != nil {
		t.Fatal(err)
	}
	m.sweep(ctx, m.names())
	fp.noInfo = true
	now = now.Add(25 * time.Hour)
	m.sweep(ctx, m.names())
	h, _ := m.Get("h1")
	if h.Status != StatusReachable || h.System == nil || h.System.Kernel != "6.1.0" || len(h.System.Warnings) != 1 || !strings.Contains(h.System.Warnings[0], "df timed out") {
		t.Fatalf("a host whose information failed: %+v %+v", h, h.System)
	}
	h, err = m.Update(ctx, "h1", model.HostSpec{Address: "10.0.0.2"})
	if err != nil || h.Status != StatusUnknown || h.System != nil || h.HostKey != "" {
		t.Fatalf("a moved host keeps what was seen of the old address: %+v, %v", h, err)
	}
	fp.noInfo = false
	m.sweep(ctx, m.names())
	if h, err = m.ForgetHostKey(ctx, "h1"); err != nil || h.HostKey != "" {
		t.Fatalf("ForgetHostKey = %+v, %v", h, err)
	}
	m.sweep(ctx, m.names())
	if h, _ = m.Get("h1"); h.HostKey == "" || h.Status != StatusReachable {
		t.Errorf("after the next probe: %+v, want the host key pinned again", h)
	}
}
