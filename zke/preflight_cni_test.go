package zke

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestCNIPluginsNeeded(t *testing.T) {
	got, err := cniPluginsNeeded()
	if want := []string{"bridge", "host-local", "portmap", "loopback"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

// TestCNIProbeScript runs the probe with sh on directories in a temp dir:
// a plugin counts only as an executable file, in any of the directories.
func TestCNIProbeScript(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "it's a"), filepath.Join(base, "b")
	for _, d := range []string{a, b, filepath.Join(b, "loopback")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]os.FileMode{filepath.Join(a, "bridge"): 0o755, filepath.Join(b, "host-local"): 0o755, filepath.Join(a, "portmap"): 0o644}
	for f, mode := range files {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	plugins := []string{"bridge", "host-local", "portmap", "loopback"}
	tests := []struct {
		name string
		dirs []string
		want []string
	}{
		{"both directories", []string{a, b}, []string{"portmap", "loopback"}},
		{"one directory", []string{a}, []string{"host-local", "portmap", "loopback"}},
		{"absent directory", []string{filepath.Join(base, "none")}, plugins},
		{"not checked", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "sh", "-c", cniProbeScript(plugins, tc.dirs)).Output()
			if err != nil {
				t.Fatal(err)
			}
			fs, missing := parseCNIProbe(string(out))
			if fs == "" || !slices.Equal(missing, tc.want) {
				t.Errorf("got %q, %q; want a file system type and %q", fs, missing, tc.want)
			}
		})
	}
}

func TestSystemdCgroupRootProblem(t *testing.T) {
	for _, tc := range []struct {
		root string
		want bool
	}{{"", false}, {"/", false}, {"/zke-node1", true}} {
		n := node{model.Node{Name: "w1", Kubelet: model.KubeletOverrides{CgroupRoot: tc.root}}}
		got := systemdCgroupRootProblem(n)
		if (got != "") != tc.want {
			t.Errorf("cgroupRoot %q: %q", tc.root, got)
		}
		if tc.want {
			for _, w := range []string{"w1", "systemd", tc.root, "SystemdCgroup = false"} {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		}
	}
}

func TestCNIConfPath(t *testing.T) {
	r := &run{facts: map[string]nodeFacts{"w2": {cri: criFacts{cniConfDir: "/var/lib/rancher/cni", cgroupDriver: "cgroupfs"}}}}
	w1, w2 := node{model.Node{Name: "w1"}}, node{model.Node{Name: "w2"}}
	if got := r.cniConfPath(w1); got != cniConfFile || cniConfFile != "/etc/cni/net.d/10-zke-bridge.conflist" {
		t.Errorf("unknown runtime: %s", got)
	}
	if got := r.cniConfPath(w2); got != "/var/lib/rancher/cni/10-zke-bridge.conflist" {
		t.Errorf("reported directory: %s", got)
	}
	if r.cgroupDriver(w1) != "cgroupfs" || r.cgroupDriver(w2) != "cgroupfs" {
		t.Error("cgroup driver")
	}
	for p, want := range map[string]bool{
		cniConfFile: true, "/var/lib/rancher/cni/10-zke-bridge.conflist": true, "/10-zke-bridge.conflist": false,
		"relative/10-zke-bridge.conflist": false, "/etc/cni/net.d/../10-zke-bridge.conflist": false, "/etc/cni/net.d/other.conflist": false,
	} {
		if isCNIConfPath(p) != want {
			t.Errorf("isCNIConfPath(%q) = %v", p, !want)
		}
	}
	if cgroupVersionOf("cgroup2fs") != "v2" || cgroupVersionOf("tmpfs") != "v1" {
		t.Error("cgroup versions")
	}
}
