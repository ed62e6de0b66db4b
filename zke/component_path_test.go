package zke

import (
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/zke/runtime"
)

func TestContainerTrouble(t *testing.T) {
	tests := []struct {
		name string
		info runtime.ContainerInfo
		base int
		want string
	}{
		{"running", runtime.ContainerInfo{Status: "running", Running: true}, 0, ""},
		{"running after restarts before the wait", runtime.ContainerInfo{Status: "running", Running: true, RestartCount: 40}, 38, ""},
		{"restarting", runtime.ContainerInfo{Status: "restarting", Running: true, RestartCount: 2}, 0, "restarting"},
		{"crash loop seen while running", runtime.ContainerInfo{Status: "running", Running: true, RestartCount: 7}, 2, stateCrashLoop},
		{"crash loop seen while restarting", runtime.ContainerInfo{Status: "restarting", RestartCount: crashLoopRestarts}, 0, stateCrashLoop},
		{"exited", runtime.ContainerInfo{Status: "exited", ExitCode: 1}, 0, "exited with code 1"},
		{"created, never started", runtime.ContainerInfo{Status: "created"}, 0, "created"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := containerTrouble(tc.info, tc.base); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorLine(t *testing.T) {
	criErr := `E0512 10:00:01.000000    1 run.go:72] "command failed" err="failed to run Kubelet: validate service connection: validate CRI v1 runtime API for endpoint \"unix:///run/containerd/containerd.sock\": rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /opt/ctrd/containerd.sock: connect: no such file or directory\""`
	tests := []struct {
		name, logs, want string
	}{
		{"klog error last", "I0512 10:00:00.000000 1 server.go:1] starting\n" + criErr + "\n", criErr},
		{"error before info lines", "I0512 starting\n" + criErr + "\nI0512 10:00:02.000000 1 shutdown\n", criErr},
		{"klog error before a usage text", criErr + "\nUsage:\n  --fail-swap-on  error if swap is on\n", criErr},
		{"plain error word", "starting\nlisten tcp: bind: address already in use: error\nbye\n", "listen tcp: bind: address already in use: error"},
		{"no error: last line", "a\nb\n\n", "b"},
		{"empty", "", ""},
		{"not klog", "E12 short\n", "E12 short"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorLine(tc.logs); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	long := errorLine("E0101 " + strings.Repeat("x", 2*maxErrorLine))
	if len(long) > maxErrorLine+len("…") || !strings.HasSuffix(long, "…") {
		t.Errorf("long line kept at %d bytes", len(long))
	}
}

func TestComponentDownErrorNamesComponentAndCause(t *testing.T) {
	e := &ComponentDownError{Node: "host2", Component: containerKubelet, State: stateCrashLoop, Restarts: 6, LastError: "E0512 validate CRI v1 runtime API"}
	want := "kubelet on host2 is not running (crash-looping, 6 restarts): last error: E0512 validate CRI v1 runtime API"
	if e.Error() != want {
		t.Errorf("got %q, want %q", e.Error(), want)
	}
}
