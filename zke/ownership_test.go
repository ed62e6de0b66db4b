package zke

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// rolesNode is a defaulted node with roles and prefix.
func rolesNode(prefix string, roles ...model.Role) node {
	return nodesOf(model.ClusterConfig{Nodes: []model.Node{{Name: "n1", Address: "10.0.0.1", PrefixPath: prefix, Roles: roles}}})[0]
}

func TestPathsOf(t *testing.T) {
	tests := []struct {
		name                    string
		roles                   []model.Role
		sharedEndpoint, restore bool
		want                    []string
	}{
		{name: "etcd", roles: []model.Role{model.RoleEtcd},
			want: []string{"/p/etc/kubernetes/ssl", "/p/var/lib/etcd"}},
		{name: "etcd in a restore", roles: []model.Role{model.RoleEtcd}, restore: true,
			want: []string{"/p/etc/kubernetes/ssl", "/p/var/lib/etcd", "/p/var/lib/etcd-restore"}},
		{name: "controlplane", roles: []model.Role{model.RoleControlPlane},
			want: []string{"/p/etc/kubernetes/ssl"}},
		{name: "controlplane with a shared endpoint", roles: []model.Role{model.RoleControlPlane}, sharedEndpoint: true,
			want: []string{"/p/etc/kubernetes/ssl", "/p/etc/kubernetes/kube-lb"}},
		{name: "worker", roles: []model.Role{model.RoleWorker},
			want: []string{"/p/etc/kubernetes/ssl", "/p/var/lib/kubelet", "/p/var/log/pods", "/p/var/log/containers",
				"/p/etc/kubernetes/kubelet-config.yaml", "/etc/cni/net.d/10-zke-bridge.conflist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range pathsOf(rolesNode("/p", tt.roles...), tt.sharedEndpoint, tt.restore, cniConfFile) {
				got = append(got, p.path)
				if !isZkePath(p.path) {
					t.Errorf("isZkePath(%s) = false", p.path)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("paths %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsZkePath(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/var/lib/etcd", true},
		{"/opt/zke/var/lib/kubelet", true},
		{"/opt/z.k+e@1/etc/kubernetes/kubelet-config.yaml", true},
		{"/etc/cni/net.d/10-zke-bridge.conflist", true},
		{"/etc/containerd/cni/10-zke-bridge.conflist", true},
		{"/", false},
		{"", false},
		{"/etc", false},
		{"/etc/kubernetes", false},
		{"/var/lib", false},
		{"/etc/passwd", false},
		{"var/lib/etcd", false},
		{"/opt/../var/lib/etcd", false},
		{"/opt//var/lib/etcd", false},
		{"/var/lib/etcd/", false},
		{"/var/lib/etcd2", false},
		{"/x/var/lib/etcd/member", false},
		{"/10-zke-bridge.conflist", false},
		{"/etc/cni/net.d/other.conflist", false},
	}
	for _, tt := range tests {
		if got := isZkePath(tt.path); got != tt.want {
			t.Errorf("isZkePath(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// TestProbeScript runs the probe with /bin/sh on a tree holding every
// kind of thing a path can be.
func TestProbeScript(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) string { return filepath.Join(root, rel) }
	for _, d := range []string{"empty", "full/sub", "it's dir"} {
		if err := os.MkdirAll(mk(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(mk("file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mk("it's dir/.hidden"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"link-to-empty": "empty", "dangling": "nowhere"} {
		if err := os.Symlink(mk(target), mk(link)); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{mk("absent"), mk("empty"), mk("full"), mk("file"), mk("it's dir"), mk("link-to-empty"), mk("dangling"), mk("absent/below")}
	want := []pathState{pathAbsent, pathEmpty, pathNonEmpty, pathFile, pathNonEmpty, pathSymlink, pathSymlink, pathAbsent}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", probeScript(paths)).CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v: %s", err, out)
	}
	got, err := parseProbe(string(out), len(paths))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("states %q, want %q", got, want)
	}
}

func TestParseProbe(t *testing.T) {
	tests := []struct {
		name, out string
		n         int
		want      []pathState
		err       string
	}{
		{name: "ok", out: "1 empty\n0 absent\n", n: 2, want: []pathState{pathAbsent, pathEmpty}},
		{name: "missing answer", out: "0 absent\n", n: 2, err: "no answer for path 1"},
		{name: "index out of range", out: "2 absent\n", n: 2, err: "unexpected line"},
		{name: "unknown state", out: "0 weird\n", n: 1, err: "unexpected state"},
		{name: "noise", out: "0 absent\nls: cannot open\n", n: 1, err: "unexpected line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProbe(tt.out, tt.n)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %q %v, want %q", got, err, tt.want)
			}
		})
	}
}

func TestPlanClaims(t *testing.T) {
	dir, file := zkePath{"/var/lib/etcd", true}, zkePath{"/etc/kubernetes/kubelet-config.yaml", false}
	tests := []struct {
		name        string
		path        zkePath
		state       pathState
		owned       bool
		wantFree    bool
		wantForeign string
	}{
		{name: "absent directory", path: dir, state: pathAbsent, wantFree: true},
		{name: "empty directory", path: dir, state: pathEmpty, wantFree: true},
		{name: "foreign data", path: dir, state: pathNonEmpty, wantForeign: "/var/lib/etcd is a non-empty directory not made by zke"},
		{name: "a file where zke makes a directory", path: dir, state: pathFile, wantForeign: "is a file"},
		{name: "a symlink", path: dir, state: pathSymlink, wantForeign: "is a symbolic link"},
		{name: "zke's own half-made directory", path: dir, state: pathNonEmpty, owned: true},
		{name: "absent file", path: file, state: pathAbsent, wantFree: true},
		{name: "foreign file", path: file, state: pathFile, wantForeign: "kubelet-config.yaml is a file not made by zke"},
		{name: "a directory where zke writes a file", path: file, state: pathEmpty, wantForeign: "is a directory"},
		{name: "zke's own file", path: file, state: pathFile, owned: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var owned []string
			if tt.owned {
				owned = []string{tt.path.path}
			}
			free, foreign := planClaims([]zkePath{tt.path}, []pathState{tt.state}, owned)
			if got := len(free) == 1; got != tt.wantFree {
				t.Errorf("free %q", free)
			}
			if tt.wantForeign == "" {
				if len(foreign) > 0 {
					t.Errorf("foreign %v", foreign)
				}
				return
			}
			var fp *ForeignPathError
			if len(foreign) != 1 || !errors.As(foreign[0], &fp) || fp.Path != tt.path.path || !errors.Is(foreign[0], ErrForeignPath) ||
				!strings.Contains(foreign[0].Error(), tt.wantForeign) {
				t.Errorf("foreign %v, want one naming %q", foreign, tt.wantForeign)
			}
		})
	}
}

func TestOwnedIn(t *testing.T) {
	applied := testConfig()
	n2, n3 := nodesOf(applied)[1], nodesOf(applied)[2]
	stranger := rolesNode("/", model.RoleWorker)
	stranger.Address = "10.0.0.99"
	tests := []struct {
		name  string
		st    State
		n     node
		want  []string
		early bool
	}{
		{name: "no record, no install", st: State{}, n: n2},
		{name: "recorded", st: State{Applied: &applied, Owned: map[string][]string{n2.Address: {"/var/lib/etcd", "/etc/kubernetes/ssl"}}}, n: n2,
			want: []string{"/etc/kubernetes/ssl", "/var/lib/etcd"}},
		{name: "an earlier release's install: the applied roles' paths", st: State{Applied: &applied}, n: n3, early: true,
			want: []string{"/etc/cni/net.d/10-zke-bridge.conflist", "/etc/kubernetes/kubelet-config.yaml", "/etc/kubernetes/ssl", "/var/lib/kubelet", "/var/log/containers", "/var/log/pods"}},
		{name: "an earlier release's install, not this node", st: State{Applied: &applied}, n: stranger},
		{name: "disowned", st: State{Applied: &applied, Owned: map[string][]string{n3.Address: {}}}, n: n3},
		{name: "a record naming what zke never writes", st: State{Owned: map[string][]string{n2.Address: {"/", "/etc", "/var/lib/etcd/..", "/var/lib/etcd"}}}, n: n2,
			want: []string{"/var/lib/etcd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownedIn(tt.st, tt.n); !slices.Equal(got, tt.want) {
				t.Errorf("owned %q, want %q", got, tt.want)
			}
			if _, early := earlierRelease(tt.st, tt.n); early != tt.early {
				t.Errorf("earlierRelease %v, want %v", early, tt.early)
			}
		})
	}
}

// TestRecordAndDisown: a record made on an earlier release's node keeps
// the paths that release wrote; a record survives the State's JSON and
// Clone; a disowned node has none, not even the earlier release's.
func TestRecordAndDisown(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	applied := testConfig()
	r.state.Applied = &applied
	n3 := r.nodes[2]
	r.record(n3, []string{"/opt/zke/var/lib/kubelet"})
	st := r.snapshot()
	got := st.Owned[n3.Address]
	if !slices.Contains(got, "/var/lib/kubelet") || !slices.Contains(got, "/opt/zke/var/lib/kubelet") || !slices.IsSorted(got) {
		t.Errorf("record %q", got)
	}
	c := st.Clone()
	c.Owned[n3.Address][0] = "changed"
	if r.snapshot().Owned[n3.Address][0] == "changed" {
		t.Error("Clone shares the record")
	}
	r.disown(n3)
	if got := r.ownedPaths(n3); len(got) != 0 {
		t.Errorf("disowned node owns %q", got)
	}
	if _, ok := r.snapshot().Owned[n3.Address]; !ok {
		t.Error("disown dropped the record: the earlier release's paths would count again")
	}
}

// TestPreflightRefusalNamesNodePathAndFix: the error of a node with a
// foreign path is user-fixable, matched by errors.Is/As, and names the
// node, the path and what to do.
func TestPreflightRefusalNamesNodePathAndFix(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	n := r.nodes[1]
	_, foreign := planClaims([]zkePath{{n.dir(dirEtcdData), true}}, []pathState{pathNonEmpty}, nil)
	err := workflow.UserFixable(nodeErr(n, nodeProblems([]string{"port 2379 is in use"}, foreign), r.foreignHint(n, foreign)))
	var fp *ForeignPathError
	if !errors.Is(err, ErrForeignPath) || !errors.Is(err, workflow.ErrUserFixable) || !errors.As(err, &fp) || fp.Path != "/var/lib/etcd" {
		t.Fatalf("error %v not classified", err)
	}
	for _, want := range []string{"node n2", "port 2379 is in use; /var/lib/etcd is a non-empty directory not made by zke",
		"move /var/lib/etcd away", "mv '/var/lib/etcd' '/var/lib/etcd.before-zke'", "nodes[1].prefixPath"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if err := r.mustOwn(n, n.dir(dirEtcdData)); !errors.Is(err, ErrForeignPath) || !strings.Contains(err.Error(), "/var/lib/etcd: not made by zke") {
		t.Errorf("mustOwn of an unrecorded path: %v", err)
	}
	r.record(n, []string{n.dir(dirEtcdData)})
	if err := r.mustOwn(n, n.dir(dirEtcdData)); err != nil {
		t.Errorf("mustOwn of a recorded path: %v", err)
	}
}
