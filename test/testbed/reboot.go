package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// unmountPasses bounds how often Reboot lists and unmounts what is left:
// unmounting a mount may uncover one it hid.
const unmountPasses = 5

// bootState is what a host looked like when the testbed had set it up and
// nothing else had run in it yet: what Reboot keeps.
type bootState struct {
	g      *hostGroup
	mounts map[mountKey]bool // the boot-time mounts of the host's mount namespace
}

// mountKey identifies a mount: mount IDs are reused once freed, so the
// mount point is part of the key.
type mountKey struct {
	id    int
	point string
}

// recordBoot records the host's boot state, once its namespaces are set up.
func (g *hostGroup) recordBoot(h *Host) error {
	mounts, err := readMountinfo(h.holder.pid())
	if err != nil {
		return err
	}
	b := &bootState{g: g, mounts: map[mountKey]bool{}}
	for _, m := range mounts {
		b.mounts[m] = true
	}
	h.boot = b
	return nil
}

// Reboot makes the host go through what a reboot does to a machine, so
// that a test can check that what runs on it comes back by itself:
//
//   - every process of the host is killed (SIGKILL): sshd, containerd,
//     dockerd, Start's processes, containers and shims, SSH sessions;
//   - volatile state is lost: /run is emptied (and filled again as at
//     start), containerd's state and runc's root (on a machine under /run,
//     here in Dir) are emptied, and every mount made in the host after
//     start is unmounted, deepest first (lazily if busy); the testbed's
//     own mounts stay;
//   - the network namespace is reset (see resetNetwork): every link but lo
//     and eth0, every address, route and rule but the testbed's, every
//     iptables rule and chain and the namespace's sysctls;
//   - files on disk (/etc, /var, /root, /tmp, /opt, the private
//     directories, Docker's and containerd's roots) stay, and so do the
//     host's namespaces, its eth0 and its host key;
//   - then sshd, containerd and dockerd (as HostOptions asked) start again
//     as at first, and Reboot returns once they answer. dockerd starts
//     again the containers whose restart policy says so (always,
//     unless-stopped), before it answers.
//
// It is bounded by ctx and by the time a host may take to start. It must
// not run concurrently with other methods of the host.
func (h *Host) Reboot(ctx context.Context) error {
	if h.holder == nil || h.boot == nil || h.holder.exited() {
		return fmt.Errorf("%s: reboot: the host is not running", h.Name)
	}
	g := h.boot.g
	ctx, cancel := context.WithTimeout(ctx, hostStartTimeout)
	defer cancel()
	steps := []struct {
		name string
		on   bool
		run  func(context.Context) error
	}{
		{"kill", true, func(context.Context) error { return h.killAll(g.hiers) }},
		{"unmount", true, h.unmountAll},
		{"volatile files", true, h.removeVolatile},
		{"network", true, h.resetNetwork},
		{"sshd", true, func(ctx context.Context) error { return g.runSSHD(ctx, h) }},
		{"containerd", g.opts.Containerd, func(ctx context.Context) error { return g.startContainerd(ctx, h) }},
		{"dockerd", g.opts.Docker, func(ctx context.Context) error { return g.startDocker(ctx, h) }},
	}
	var took []string
	for _, step := range steps {
		if !step.on {
			continue
		}
		start := time.Now()
		if err := step.run(ctx); err != nil {
			return fmt.Errorf("%s: reboot: %s: %w", h.Name, step.name, err)
		}
		took = append(took, fmt.Sprintf("%s %s", step.name, time.Since(start).Round(time.Millisecond)))
	}
	g.t.Logf("testbed: %s rebooted: %s", h.Name, strings.Join(took, ", "))
	return nil
}

// killAll kills every process in the host's cgroup but the holder of its
// namespaces, at once (as a power cut would, so that dockerd cannot
// restart a container it sees die), until none is left, and forgets the
// daemons and Start's processes.
func (h *Host) killAll(hiers []string) error {
	h.mu.Lock()
	procs := append(append([]*process{}, h.daemons...), h.started...)
	h.daemons, h.started, h.sshd = nil, nil, nil
	h.mu.Unlock()
	for _, p := range procs {
		if !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	holder := h.holder.pid()
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	err := poll(ctx, func(context.Context) error {
		var left []int
		for _, pid := range cgroupPids(hiers, h.cgroup) {
			if pid != holder {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				left = append(left, pid)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d processes left in cgroup %s: %v", len(left), h.cgroup, left)
		}
		return nil
	})
	return errors.Join(err, stopAll(procs, 0))
}

// unmountAll unmounts every mount of the host's mount namespace that was
// not there at start, latest first (a mount comes after the one it is
// mounted on), lazily when busy, until none is left.
func (h *Host) unmountAll(ctx context.Context) error {
	for range unmountPasses {
		mounts, err := readMountinfo(h.holder.pid())
		if err != nil {
			return err
		}
		var script strings.Builder
		for i := len(mounts) - 1; i >= 0; i-- {
			if m := mounts[i]; !h.boot.mounts[m] {
				fmt.Fprintf(&script, "umount %[1]s 2>/dev/null || umount -l %[1]s || true\n", shellQuote(m.point))
			}
		}
		if script.Len() == 0 {
			return nil
		}
		if _, err := h.Run(ctx, script.String()); err != nil {
			return err
		}
	}
	mounts, err := readMountinfo(h.holder.pid())
	if err != nil {
		return err
	}
	var left []string
	for _, m := range mounts {
		if !h.boot.mounts[m] {
			left = append(left, m.point)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("mounts left after %d passes: %s", unmountPasses, strings.Join(left, " "))
	}
	return nil
}

// readMountinfo lists the mounts of pid's mount namespace in its order.
func readMountinfo(pid int) ([]mountKey, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("list mounts: %w", err)
	}
	defer f.Close()
	var mounts []mountKey
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		id, err := strconv.Atoi(fields[0])
		if err != nil {
			return nil, fmt.Errorf("list mounts: mount ID %q", fields[0])
		}
		mounts = append(mounts, mountKey{id: id, point: unescapeMountinfo(fields[4])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list mounts: %w", err)
	}
	return mounts, nil
}

// mountinfoEscape is how the kernel writes space, tab, newline and
// backslash in mountinfo: \ and three octal digits.
var mountinfoEscape = regexp.MustCompile(`\\[0-7]{3}`)

func unescapeMountinfo(s string) string {
	return mountinfoEscape.ReplaceAllStringFunc(s, func(e string) string {
		n, _ := strconv.ParseUint(e[1:], 8, 8)
		return string([]byte{byte(n)})
	})
}

// removeVolatile empties what lives in tmpfs on a machine: the host's
// /run, and containerd's state directory and runc's root, which the
// testbed's containerd configuration puts under Dir instead of /run (read
// from the configuration, whatever its version). Then /run gets what the
// testbed puts there at start.
func (h *Host) removeVolatile(ctx context.Context) error {
	dirs := []string{filepath.Join(h.Dir, "run")}
	if conf, err := os.ReadFile(filepath.Join(h.Dir, "containerd", "config.toml")); err == nil {
		for _, m := range volatileConfigPath.FindAllStringSubmatch(string(conf), -1) {
			if p := filepath.Clean(m[1]); strings.HasPrefix(p, h.Dir+"/") {
				dirs = append(dirs, p)
			}
		}
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(d, e.Name())); err != nil {
				return err
			}
		}
	}
	_, err := h.Run(ctx, h.boot.g.runScript(h))
	return err
}

// volatileConfigPath matches containerd's state directory and runc's root
// in a containerd configuration.
var volatileConfigPath = regexp.MustCompile(`(?m)^\s*(?:state|Root)\s*=\s*"([^"]+)"`)
