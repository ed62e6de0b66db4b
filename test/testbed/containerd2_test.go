package testbed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestContainerd2 starts a host on containerd 2 (HostOptions.Containerd2)
// with Docker: its containerd answers as v2.4.2 with the CRI plugin loaded
// and at its defaults (CNI from /etc/cni/net.d and /opt/cni/bin, the
// cgroupfs driver, its default sandbox image), the pod images and that
// sandbox image are in its k8s.io namespace, a container runs on it
// through containerd 2's runc shim, and dockerd runs containers on it.
func TestContainerd2(t *testing.T) {
	hosts := testbed.StartHosts(t, 1, testbed.HostOptions{
		Containerd2: []int{1}, Docker: true, Images: []string{testbed.PauseImage, testbed.BusyboxImage},
	})
	h := hosts[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !h.Containerd2 || !filepath.IsAbs(h.Ctr) {
		t.Fatalf("host1: Containerd2 %v, Ctr %q: want true and containerd 2's ctr", h.Containerd2, h.Ctr)
	}
	ctr := func(args ...string) string {
		t.Helper()
		out, err := h.Exec(ctx, h.Ctr, append([]string{"--address", h.ContainerdSocketPath, "--namespace", "k8s.io"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	version := ctr("version")
	if _, server, ok := strings.Cut(version, "Server:"); !ok || !strings.Contains(server, "Version:  "+testbed.Containerd2Version) {
		t.Errorf("ctr version: want server %s:\n%s", testbed.Containerd2Version, version)
	}
	plugins := ctr("plugins", "ls")
	for _, p := range [][2]string{{"io.containerd.grpc.v1", "cri"}, {"io.containerd.cri.v1", "images"}, {"io.containerd.cri.v1", "runtime"}} {
		if !hasPlugin(plugins, p[0], p[1]) {
			t.Errorf("ctr plugins ls: %s %s is not ok:\n%s", p[0], p[1], plugins)
		}
	}

	// The CRI's configuration: containerd 2's defaults where the testbed
	// sets nothing.
	config := filepath.Join(h.Dir, "containerd", "config.toml")
	dump, err := h.Exec(ctx, filepath.Join(filepath.Dir(h.Ctr), "containerd"), "--config", config, "config", "dump")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sandbox = '" + testbed.Containerd2SandboxImage + "'", "bin_dirs = ['/opt/cni/bin']", "conf_dir = '/etc/cni/net.d'",
		"SystemdCgroup = false", "runtime_type = 'io.containerd.runc.v2'", "Root = '" + filepath.Join(h.Dir, "runc") + "'",
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("containerd config dump: no %q", want)
		}
	}
	if written, err := os.ReadFile(config); err != nil {
		t.Error(err)
	} else if strings.Contains(string(written), "cni") || strings.Contains(string(written), "sandbox") {
		t.Errorf("%s sets the CRI's CNI or sandbox image:\n%s", config, written)
	}

	if log, err := os.ReadFile(filepath.Join(h.Dir, "logs", "containerd.log")); err != nil {
		t.Error(err)
	} else if strings.Contains(string(log), "Configuration migrated") {
		t.Errorf("containerd migrated %s: write containerd %s's latest version", config, testbed.Containerd2Version)
	}

	images := strings.Fields(ctr("images", "ls", "-q"))
	for _, img := range []string{testbed.PauseImage, testbed.Containerd2SandboxImage, testbed.BusyboxImage} {
		if !slices.Contains(images, img) {
			t.Errorf("k8s.io namespace: no %s in %v", img, images)
		}
	}

	// Containers go in the host's cgroup, where its cleanup finds them.
	cgroup := h.CgroupRoot + "/containerd2-test"
	if out := ctr("run", "--rm", "--cgroup", cgroup+"/echo", testbed.BusyboxImage, "c2-echo", "echo", "hello from containerd 2"); !strings.Contains(out, "hello from containerd 2") {
		t.Errorf("ctr run: %q", out)
	}
	ctr("run", "-d", "--cgroup", cgroup+"/sleep", testbed.BusyboxImage, "c2-sleep", "sleep", "600")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := h.Exec(ctx, h.Ctr, "--address", h.ContainerdSocketPath, "--namespace", "k8s.io", "tasks", "kill", "-s", "KILL", "c2-sleep"); err != nil {
			t.Logf("kill c2-sleep: %v: %s", err, out)
		}
	})
	if shim, err := shimOf(h.ContainerdSocketPath, "c2-sleep"); err != nil {
		t.Error(err)
	} else if want := filepath.Join(filepath.Dir(h.Ctr), "containerd-shim-runc-v2"); shim != want {
		t.Errorf("c2-sleep's shim is %s, want %s", shim, want)
	}

	out, err := h.Exec(ctx, "docker", "run", "--rm", "--network", "host", testbed.BusyboxImage, "echo", "docker on containerd 2")
	if err != nil || !strings.Contains(out, "docker on containerd 2") {
		t.Errorf("docker run: %v: %q", err, out)
	}
}

// hasPlugin reports whether `ctr plugins ls` lists a plugin as ok.
func hasPlugin(list, typ, id string) bool {
	for line := range strings.SplitSeq(list, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == typ && f[1] == id && f[len(f)-1] == "ok" {
			return true
		}
	}
	return false
}

// shimOf returns the executable of the runc shim that runs container id
// for the containerd at socket (inside the host); every host shares the
// machine's PID namespace.
func shimOf(socket, id string) (string, error) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if !strings.HasSuffix(args[0], "containerd-shim-runc-v2") || !slices.Contains(args, socket) {
			continue
		}
		if i := slices.Index(args, "-id"); i < 0 || i+1 >= len(args) || args[i+1] != id {
			continue
		}
		return os.Readlink(filepath.Join(filepath.Dir(p), "exe"))
	}
	return "", fmt.Errorf("no containerd-shim-runc-v2 of %s runs %s", socket, id)
}
