package testbed_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// leftovers is what a test leaves running or changed on purpose, for the
// cleanup to undo.
type leftovers struct {
	pids    []int
	dirs    []string
	cgroups []string
	slot    string // e.g. "sctb0", the prefix of the slot's links
}

func TestCleanupLeavesMachineAsBefore(t *testing.T) {
	testbed.Require(t, testbed.NeedRoot)
	const sysctl = "/proc/sys/kernel/panic"
	before, err := os.ReadFile(sysctl)
	if err != nil {
		t.Fatal(err)
	}
	var left leftovers
	t.Run("busy hosts", func(t *testing.T) {
		hosts := testbed.StartHosts(t, 2, testbed.HostOptions{Docker: true, Images: []string{testbed.BusyboxImage}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h := hosts[0]
		mustExec := func(name string, args ...string) string {
			out, err := h.Exec(ctx, name, args...)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(out)
		}
		// A container left running, its processes under a containerd shim.
		mustExec("docker", "run", "-d", "--name", "left", testbed.BusyboxImage, "sleep", "3600")
		left.addPid(t, mustExec("docker", "inspect", "--format", "{{.State.Pid}}", "left"))
		// A process started over SSH and left behind.
		out, err := sshRun(ctx, h, "nohup sleep 3600 >/dev/null 2>&1 & echo $!")
		if err != nil {
			t.Fatalf("ssh: %v: %s", err, out)
		}
		left.addPid(t, strings.TrimSpace(out))
		// The daemons.
		for _, pidfile := range []string{"/run/sshd.pid", "/run/docker.pid"} {
			data, err := h.ReadFile(pidfile)
			if err != nil {
				t.Fatal(err)
			}
			left.addPid(t, strings.TrimSpace(string(data)))
		}
		// A machine-wide sysctl changed, as a kubelet does, and a mount.
		mustExec("sh", "-c", "echo 10 > "+sysctl)
		mustExec("mount", "-t", "tmpfs", "tmpfs", "/var/lib/kubelet")
		for _, h := range hosts {
			left.dirs = append(left.dirs, h.Dir)
			left.cgroups = append(left.cgroups, filepath.Dir(h.CgroupRoot))
		}
		left.slot = "sctb" + strings.Split(h.Address, ".")[2]
	})
	if left.slot == "" {
		t.Fatal("the hosts did not start")
	}

	for _, pid := range left.pids {
		if state := processState(pid); state != "" && state != "Z" {
			t.Errorf("process %d still runs after cleanup (state %s)", pid, state)
		}
	}
	for _, dir := range left.dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after cleanup (%v)", dir, err)
		}
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, cg := range left.cgroups {
		matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", cg))
		if len(matches) > 0 {
			t.Errorf("cgroups %v still exist after cleanup", matches)
		}
	}
	for _, dir := range left.dirs {
		if strings.Contains(string(mountinfo), dir) {
			t.Errorf("a mount under %s is still there after cleanup", dir)
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifaces {
		if ifc.Name == left.slot || strings.HasPrefix(ifc.Name, left.slot+"h") {
			t.Errorf("link %s still exists after cleanup", ifc.Name)
		}
	}
	if after, err := os.ReadFile(sysctl); err != nil || string(after) != string(before) {
		t.Errorf("%s = %q after cleanup, want %q restored (%v)", sysctl, after, before, err)
	}
}

// processState is the state letter of a process ("Z" for a dead one its
// parent, here init, has not reaped yet), or "" when there is none.
func processState(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// pid (comm) state ...; comm may contain spaces and parentheses.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	if f := strings.Fields(rest); len(f) > 0 {
		return f[0]
	}
	return ""
}

func (l *leftovers) addPid(t *testing.T, s string) {
	t.Helper()
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 1 {
		t.Fatalf("not a pid: %q", s)
	}
	l.pids = append(l.pids, pid)
}

// failingTB reports a failed test, to see what the cleanups print then.
type failingTB struct {
	testing.TB
	logs []string
}

func (f *failingTB) Failed() bool { return true }

func (f *failingTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, format)
	for _, a := range args {
		if s, ok := a.(string); ok {
			f.logs = append(f.logs, s)
		}
	}
}

func TestFailedTestPrintsLogs(t *testing.T) {
	tb := &failingTB{}
	t.Run("fails", func(t *testing.T) {
		tb.TB = t
		testbed.StartHosts(tb, 1, testbed.HostOptions{})
		testbed.StartControlPlane(tb, testbed.ControlPlaneOptions{})
	})
	logs := strings.Join(tb.logs, "\n")
	for _, want := range []string{"sshd.log", "namespaces.log", "kube-apiserver.log", "etcd.log", "Server listening"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs printed for a failed test lack %q:\n%s", want, logs)
		}
	}
}
