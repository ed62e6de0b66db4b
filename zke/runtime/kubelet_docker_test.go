package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke/runtime"
)

// testKubeletStyle starts a container with the options of RKE's kubelet
// on this machine, whose bounding set may lack capabilities.
func (b *bed) testKubeletStyle(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	info, err := d.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	missing := missingCaps(t, info.LastCapability())
	t.Logf("capabilities missing from the bounding set: %v", missing)
	dir := filepath.Join(b.h.Dir, "kubelet-test")
	spec := runtime.ContainerSpec{
		Name: "kubelet", Image: testbed.BusyboxImage, Cmd: []string{"sleep", "3600"},
		NetworkMode: "host", PidMode: "host",
		Binds: []string{dir + ":/var/lib/kubelet:rshared", "/sys:/sys:ro,rslave"},
	}.WithAllPrivileges(missing)
	if act, err := d.Ensure(ctx, spec); err != nil || act != runtime.ActionCreated {
		t.Fatalf("Ensure(kubelet-style) = %s, %v", act, err)
	}
	t.Cleanup(func() {
		// Undo the propagated mount even when the test failed half-way.
		b.h.Exec(context.Background(), "umount", "-l", filepath.Join(dir, "m"))
		d.Remove(context.Background(), "kubelet")
	})
	if info, err := d.Inspect(ctx, "kubelet"); err != nil || !info.Running {
		t.Fatalf("kubelet-style container: %+v, %v", info, err)
	}
	if got := b.cli(t, "inspect", "-f", "{{.HostConfig.NetworkMode}} {{.HostConfig.PidMode}} {{.HostConfig.Privileged}}", "kubelet"); got != "host host "+strconv.FormatBool(len(missing) == 0) {
		t.Errorf("host config: %s", got)
	}
	// Every capability the bounding set allows, of those the engine
	// knows, is effective, and no other.
	status := b.cli(t, "exec", "kubelet", "cat", "/proc/self/status")
	eff, err1 := strconv.ParseUint(strings.TrimPrefix(grepLine(status, "CapEff"), "CapEff:\t"), 16, 64)
	bnd, err2 := strconv.ParseUint(capLine(t, "CapBnd"), 16, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("capability masks: %v, %v", err1, err2)
	}
	dockerKnown := uint64(1)<<(info.LastCapability()+1) - 1
	if eff&^bnd != 0 || bnd&dockerKnown&^eff != 0 {
		t.Errorf("effective capabilities %#x in the container, bounding set %#x", eff, bnd)
	}
	// A mount made inside the container under an rshared bind shows on
	// the node, as the kubelet's volume mounts must.
	b.cli(t, "exec", "kubelet", "sh", "-c", "mkdir -p /var/lib/kubelet/m && mount -t tmpfs tmpfs /var/lib/kubelet/m && echo shared > /var/lib/kubelet/m/f")
	if out, err := b.h.ReadFile(filepath.Join(dir, "m", "f")); err != nil || string(out) != "shared\n" {
		t.Errorf("the mount did not propagate to the node: %q, %v", out, err)
	}
	b.cli(t, "exec", "kubelet", "umount", "/var/lib/kubelet/m")
	// The host's processes are visible (pid=host).
	if got := b.cli(t, "exec", "kubelet", "cat", "/proc/1/comm"); got == "sleep" {
		t.Error("pid 1 is the container's own process: pid=host did not apply")
	}
}

// missingCaps reads this machine's bounding set, as zke's preflight reads
// the node's.
func missingCaps(t *testing.T, engineLast int) []string {
	t.Helper()
	bnd, err := strconv.ParseUint(capLine(t, "CapBnd"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Fatal(err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return runtime.MissingCapabilities(bnd, min(last, engineLast))
}

// capLine returns a capability mask of /proc/self/status.
func capLine(t *testing.T, field string) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	line := grepLine(string(data), field)
	_, v, _ := strings.Cut(line, "\t")
	return v
}

func grepLine(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix+":") {
			return l
		}
	}
	return ""
}
