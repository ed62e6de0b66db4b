package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
)

// hostTable is a HostDirectory over a fixed table.
type hostTable map[string]model.HostSpec

func (h hostTable) Resolve(name string) (model.HostSpec, error) {
	s, ok := h[name]
	if !ok {
		return model.HostSpec{}, fmt.Errorf("host %s: not registered", name)
	}
	return s, nil
}

// Nodes naming registered hosts take their address, SSH port, user and
// key from the registry; what cannot work names its field.
func TestResolveHosts(t *testing.T) {
	key, other := testKey(t), testKey(t)
	dir := hostTable{
		"a": {Name: "a", Address: "10.0.0.1", Port: 2222, User: "ops", SSHKey: key},
		"b": {Name: "b", Address: "10.0.0.2", Port: 22, User: "root", SSHKey: key},
		"c": {Name: "c", Address: "10.0.0.3", Port: 22, User: "root", SSHKey: other},
	}
	m := &Manager{opts: Options{Hosts: dir}}
	cfg := model.ClusterConfig{Nodes: []model.Node{{Host: "a"}, {Name: "n2", Host: "b", SSHUser: "admin"}, {Name: "n3", Address: "10.0.0.9"}}}
	if err := m.resolveHosts(&cfg); err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Nodes[0], cfg.Nodes[1]
	if a.Name != "a" || a.Address != "10.0.0.1" || a.SSHPort != 2222 || a.SSHUser != "ops" || b.SSHUser != "admin" || cfg.SSHKey != key {
		t.Errorf("resolved nodes %+v / %+v, key set %v", a, b, cfg.SSHKey == key)
	}
	for _, tc := range []struct {
		name  string
		cfg   model.ClusterConfig
		field string
	}{
		{"unknown host", model.ClusterConfig{Nodes: []model.Node{{Host: "zz"}}}, "nodes[0].host"},
		{"other address", model.ClusterConfig{Nodes: []model.Node{{Host: "a", Address: "10.0.0.5"}}}, "nodes[0].address"},
		{"two keys", model.ClusterConfig{Nodes: []model.Node{{Host: "a"}, {Host: "c"}}}, "nodes[1].host"},
		{"another cluster key", model.ClusterConfig{SSHKey: other, Nodes: []model.Node{{Host: "a"}}}, "sshKey"},
	} {
		err := m.resolveHosts(&tc.cfg)
		var verrs validation.Errors
		if !errors.As(err, &verrs) || verrs[0].Field != tc.field {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	if err := (&Manager{}).resolveHosts(&model.ClusterConfig{Nodes: []model.Node{{Host: "a"}}}); err == nil {
		t.Error("a node naming a host without a registry was accepted")
	}
}

// vanishingHosts resolves a host once: the second resolve (after the
// create reserved its name) finds it deleted.
type vanishingHosts struct {
	spec  model.HostSpec
	calls int
}

func (v *vanishingHosts) Resolve(name string) (model.HostSpec, error) {
	v.calls++
	if v.calls > 1 || name != v.spec.Name {
		return model.HostSpec{}, fmt.Errorf("host %s: not registered", name)
	}
	return v.spec, nil
}

// A host deleted between a create's resolve and its reservation fails the
// create with the field named, and leaves no cluster behind; a reserved
// create counts as a user of its hosts.
func TestCreateRechecksItsHostsAfterReserving(t *testing.T) {
	key := testKey(t)
	dir := &vanishingHosts{spec: model.HostSpec{Name: "n1", Address: "10.0.0.1", Port: 22, User: "root", SSHKey: key}}
	inst := &stepInstaller{failStep: "etcd", block: make(chan struct{})}
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) { o.Installer = inst; o.Hosts = dir })
	cfg := createConfig(t, "gone")
	cfg.SSHKey = key
	cfg.Nodes[0].Address, cfg.Nodes[0].Name, cfg.Nodes[0].Host = "", "", "n1"
	_, err := h.m.Create(context.Background(), cfg)
	var verrs validation.Errors
	if !errors.As(err, &verrs) || verrs[0].Field != "nodes[0].host" || !strings.Contains(verrs[0].Reason, "deleted while") {
		t.Fatalf("create with a host deleted meanwhile: %v", err)
	}
	if _, err := h.m.Get("gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the failed create left cluster gone: %v", err)
	}
	e, err := h.m.reserve("held", fsm.StateNew, &record{Name: "held", Config: &model.ClusterConfig{Nodes: []model.Node{{Host: "n7"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.m.release(e)
	if users := h.m.ClustersUsingHost("n7"); len(users) != 1 || users[0] != "held" {
		t.Errorf("a reserved create's hosts: used by %v, want [held]", users)
	}
}
