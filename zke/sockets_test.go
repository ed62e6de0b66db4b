package zke

import (
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/zke/runtime"
)

func TestParseResolvedSocket(t *testing.T) {
	tests := []struct {
		name, out string
		want      nodeSocket
		wantErr   bool
	}{
		{"plain socket", "socket\n/run/containerd/containerd.sock\n", nodeSocket{"/run/containerd/containerd.sock", "/run/containerd/containerd.sock", socketIsSocket}, false},
		{"symlink", "socket\n/opt/ctrd/containerd.sock\n", nodeSocket{"/run/containerd/containerd.sock", "/opt/ctrd/containerd.sock", socketIsSocket}, false},
		{"dangling", "missing\n/opt/ctrd/containerd.sock\n", nodeSocket{"/run/containerd/containerd.sock", "/opt/ctrd/containerd.sock", socketMissing}, false},
		{"directory missing", "missing\n\n", nodeSocket{"/run/containerd/containerd.sock", "", socketMissing}, false},
		{"relative answer ignored", "socket\nfoo\n", nodeSocket{"/run/containerd/containerd.sock", "", socketIsSocket}, false},
		{"garbage", "sh: readlink: not found\n", nodeSocket{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseResolvedSocket("/run/containerd/containerd.sock", tc.out)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %+v, %v; want %+v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestResolveSocketScriptQuotes(t *testing.T) {
	s := resolveSocketScript("/run/it's; rm -rf /")
	if !strings.Contains(s, `p='/run/it'\''s; rm -rf /'`) {
		t.Errorf("path not shell-quoted:\n%s", s)
	}
}

func TestSocketBinds(t *testing.T) {
	kubelet := []string{"/var/lib/kubelet", "/sys", "/dev", "/run", "/var/run", "/etc/cni", "/var/lib/cni"}
	tests := []struct {
		name string
		s    nodeSocket
		want []string
	}{
		{"default, under /run", nodeSocket{Configured: "/run/containerd/containerd.sock", Resolved: "/run/containerd/containerd.sock"}, nil},
		{"symlink out of /run", nodeSocket{Configured: "/run/containerd/containerd.sock", Resolved: "/opt/ctrd/containerd.sock"},
			[]string{"/opt/ctrd:/opt/ctrd"}},
		{"configured real path", nodeSocket{Configured: "/srv/ctrd/containerd.sock", Resolved: "/srv/ctrd/containerd.sock"},
			[]string{"/srv/ctrd:/srv/ctrd"}},
		{"symlink elsewhere to elsewhere", nodeSocket{Configured: "/etc/k8s/cri.sock", Resolved: "/data/ctrd/containerd.sock"},
			[]string{"/data/ctrd:/data/ctrd", "/etc/k8s:/etc/k8s"}},
		{"nested directories bound once", nodeSocket{Configured: "/opt/cri.sock", Resolved: "/opt/ctrd/containerd.sock"},
			[]string{"/opt:/opt"}},
		{"socket in /", nodeSocket{Configured: "/containerd.sock", Resolved: "/containerd.sock"},
			[]string{"/containerd.sock:/containerd.sock"}},
		{"unresolved", nodeSocket{Configured: "/var/run/containerd/containerd.sock"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := socketBinds(tc.s, kubelet); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCRISocketProblemNamesTheField(t *testing.T) {
	field := "nodes[1].containerdSocket"
	tests := []struct {
		name string
		s    nodeSocket
		want string // "" for no problem
	}{
		{"socket", nodeSocket{"/run/c.sock", "/opt/c.sock", socketIsSocket}, ""},
		{"missing", nodeSocket{"/run/c.sock", "/run/c.sock", socketMissing}, "does not exist"},
		{"dangling link", nodeSocket{"/run/c.sock", "/opt/c.sock", socketMissing}, "leads to /opt/c.sock"},
		{"not a socket", nodeSocket{"/run/c.sock", "/run/c.sock", socketOther}, "is not a socket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := criSocketProblem(tc.s, field)
			if tc.want == "" {
				if got != "" {
					t.Errorf("problem %q for a socket", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.Contains(got, field) {
				t.Errorf("got %q, want it to say %q and name %s", got, tc.want, field)
			}
		})
	}
}

// containerd's root reaches the kubelet's container read-only and rslave,
// unless a bind already holds it; a root it did not say is not guessed.
func TestContainerdRootBind(t *testing.T) {
	for _, tc := range []struct {
		root    string
		covered []string
		want    []string
	}{
		{"/var/lib/containerd", []string{"/var/lib/kubelet", "/run"}, []string{"/var/lib/containerd:/var/lib/containerd:ro,rslave"}},
		{"/var/lib/containerd/", nil, []string{"/var/lib/containerd:/var/lib/containerd:ro,rslave"}},
		{"/run/k3s/containerd", []string{"/run"}, nil},
		{"/data/containerd", []string{"/data/containerd"}, nil},
		{"", []string{"/run"}, nil},
		{"relative/dir", nil, nil},
	} {
		got := containerdRootBind(tc.root, tc.covered)
		if !slices.Equal(got, tc.want) {
			t.Errorf("containerdRootBind(%q, %v) = %v, want %v", tc.root, tc.covered, got, tc.want)
		}
		for _, b := range got {
			if _, err := runtime.ParseBind(b); err != nil {
				t.Errorf("%q is not a bind Docker takes: %v", b, err)
			}
		}
	}
}
