package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// command builds a command that runs inside the host's namespaces, in the
// host's daemons cgroup, with a clean environment (hostEnv) and / as
// working directory.
func (h *Host) command(name string, args ...string) *exec.Cmd {
	return h.Command(context.Background(), name, args...)
}

// Command builds a command that runs inside the host's namespaces (as if
// logged in on the host: /var/run/docker.sock is the host's dockerd), in
// the host's cgroup so that cleanup finds whatever it leaves running. Its
// environment is hostEnv (callers may append) and its working directory is
// /: cmd.Dir is ignored. ctx kills the command.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	full := append([]string{
		"--target", strconv.Itoa(h.holder.pid()), "--net", "--mount", "--uts", "--",
		"sh", "-c", h.attach, "sh", name,
	}, args...)
	cmd := exec.CommandContext(ctx, h.nsenter, full...)
	cmd.Env = hostEnv()
	cmd.WaitDelay = execWaitDelay
	return cmd
}

// Exec runs a command inside the host and returns its combined output; a
// failure carries the output.
func (h *Host) Exec(ctx context.Context, name string, args ...string) (string, error) {
	out, err := h.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s on %s: %w: %s", name, h.Name, err, out)
	}
	return string(out), nil
}

// Run runs a shell script inside the host (sh -c script) and returns its
// combined output, like Exec.
func (h *Host) Run(ctx context.Context, script string) (string, error) {
	return h.Exec(ctx, "sh", "-c", script)
}

// Process is a long-running process started with Host.Start.
type Process struct{ p *process }

// Pid is the process ID in the test's PID namespace.
func (p *Process) Pid() int { return p.p.pid() }

// LogPath is the file receiving the process's stdout and stderr.
func (p *Process) LogPath() string { return p.p.logPath }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// Stop sends SIGTERM and, after a bounded grace, SIGKILL, and waits.
func (p *Process) Stop() error { return p.p.stop(stopGrace) }

// Start starts a long-running process inside the host (e.g. a kubelet),
// logging to Dir/logs/<base name of program>.log. The host's cleanup stops
// it first, before pods and daemons.
func (h *Host) Start(name string, args ...string) (*Process, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	log := filepath.Join(h.Dir, "logs", filepath.Base(name)+".log")
	p, err := startProcess(filepath.Base(name)+" on "+h.Name, h.command(name, args...), log)
	if err != nil {
		return nil, err
	}
	h.started = append(h.started, p)
	return &Process{p: p}, nil
}

// Path returns where path inside the host is in the test's namespace (via
// /proc/<pid>/root of a process in the host), for reading and writing the
// host's files directly.
func (h *Host) Path(path string) string {
	return filepath.Join("/proc", strconv.Itoa(h.holder.pid()), "root", path)
}

// WriteFile writes a file inside the host, creating its parent directories.
func (h *Host) WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(h.Path(path)), 0o755); err != nil {
		return fmt.Errorf("write %s on %s: %w", path, h.Name, err)
	}
	if err := os.WriteFile(h.Path(path), data, perm); err != nil {
		return fmt.Errorf("write %s on %s: %w", path, h.Name, err)
	}
	return nil
}

// ReadFile reads a file inside the host.
func (h *Host) ReadFile(path string) ([]byte, error) {
	data, err := os.ReadFile(h.Path(path))
	if err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", path, h.Name, err)
	}
	return data, nil
}

// hostEnv is the environment of every process started inside a host, so
// that nothing of the test's environment (DOCKER_HOST, KUBECONFIG, ...)
// leaks in.
func hostEnv() []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}
}
