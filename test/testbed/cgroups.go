package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// cgroupRoot is where the machine's cgroup filesystems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupMount is one mount at or under /sys/fs/cgroup: the tmpfs holding
// v1 hierarchies, a v1 hierarchy, or the v2 hierarchy. A host's mount
// namespace mounts the same list again over its own /sys.
type cgroupMount struct {
	dir     string
	fstype  string
	options []string // the options that select the hierarchy and its flags
}

// genericMountOptions are per-mount options that do not identify a
// hierarchy and are left out when mounting it again.
func genericMountOptions() []string {
	return []string{"rw", "ro", "relatime", "noatime", "strictatime", "nodiratime", "nosuid", "nodev", "noexec"}
}

// cgroupMounts lists the cgroup mounts of the test's mount namespace in
// mount order.
func cgroupMounts() ([]cgroupMount, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, fmt.Errorf("list cgroup mounts: %w", err)
	}
	defer f.Close()
	var mounts []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || (fields[1] != cgroupRoot && !strings.HasPrefix(fields[1], cgroupRoot+"/")) {
			continue
		}
		m := cgroupMount{dir: fields[1], fstype: fields[2]}
		for _, o := range strings.Split(fields[3], ",") {
			if !slices.Contains(genericMountOptions(), o) && (m.fstype != "tmpfs" || strings.HasPrefix(o, "mode=")) {
				m.options = append(m.options, o)
			}
		}
		if m.fstype == "tmpfs" || m.fstype == "cgroup" || m.fstype == "cgroup2" {
			mounts = append(mounts, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list cgroup mounts: %w", err)
	}
	if len(hierarchies(mounts)) == 0 {
		return nil, fmt.Errorf("%w: no cgroup filesystem mounted under %s", ErrMissing, cgroupRoot)
	}
	return mounts, nil
}

// hierarchies are the directories of the cgroup hierarchies among mounts.
func hierarchies(mounts []cgroupMount) []string {
	var dirs []string
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			dirs = append(dirs, m.dir)
		}
	}
	return dirs
}

// createCgroup creates rel (e.g. /sctb0h1/daemons) and its parents in every
// hierarchy. A v1 cpuset cgroup starts with no CPUs, so it copies its
// parent's; a v2 cgroup passes its controllers on to its children.
func createCgroup(hiers []string, rel string) error {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	for _, h := range hiers {
		dir := h
		for _, part := range parts {
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := inheritIfEmpty(parent, dir, f); err != nil {
					return err
				}
			}
			if err := enableControllers(parent); err != nil {
				return err
			}
		}
	}
	return nil
}

// inheritIfEmpty copies a cgroup file from parent when it exists and is
// empty in dir.
func inheritIfEmpty(parent, dir, name string) error {
	cur, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || strings.TrimSpace(string(cur)) != "" {
		return nil // not a cpuset hierarchy, or already set
	}
	val, err := os.ReadFile(filepath.Join(parent, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // cgroup v2: an empty cpuset means "the parent's"
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(parent, name), err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), val, 0o644); err != nil {
		return fmt.Errorf("set %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// enableControllers makes a v2 cgroup's controllers available to its
// children (a no-op in v1 and for the v2 hierarchy of a hybrid setup,
// which has no controllers). The hierarchy's root is left as it is.
func enableControllers(dir string) error {
	if !strings.Contains(strings.TrimPrefix(dir, cgroupRoot), "/sctb") {
		return nil
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil || strings.TrimSpace(string(avail)) == "" {
		return nil
	}
	enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	var add []string
	for _, c := range strings.Fields(string(avail)) {
		if !slices.Contains(strings.Fields(string(enabled)), c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(add, " ")), 0o644); err != nil {
		return fmt.Errorf("enable controllers in %s: %w", dir, err)
	}
	return nil
}

// cgroupPids lists the processes in rel and below it, in every hierarchy.
func cgroupPids(hiers []string, rel string) []int {
	seen := map[int]bool{}
	var pids []int
	for _, h := range hiers {
		_ = filepath.WalkDir(filepath.Join(h, rel), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// killCgroup sends SIGKILL to every process in rel and below until none is
// left (processes may fork while being killed), bounded by killWait.
func killCgroup(hiers []string, rel string) error {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	err := poll(ctx, func(context.Context) error {
		pids := cgroupPids(hiers, rel)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(pids) > 0 {
			return fmt.Errorf("%d processes left in cgroup %s: %v", len(pids), rel, pids)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("kill cgroup %s: %w", rel, err)
	}
	return nil
}

// removeCgroup removes rel and every cgroup below it, deepest first, in
// every hierarchy. It kills whatever is (still or again) inside and retries
// while killed processes are leaving, bounded by killWait.
func removeCgroup(hiers []string, rel string) error {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	err := poll(ctx, func(context.Context) error {
		for _, pid := range cgroupPids(hiers, rel) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var errs []error
		for _, h := range hiers {
			var dirs []string
			_ = filepath.WalkDir(filepath.Join(h, rel), func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
					errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
				}
			}
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", rel, err)
	}
	return nil
}

// attachScript is a shell prologue that moves the shell into rel in every
// hierarchy and then executes its arguments, so that a command started
// inside a host is in the host's cgroup from its first instruction.
func attachScript(hiers []string, rel string) string {
	var b strings.Builder
	for _, h := range hiers {
		fmt.Fprintf(&b, "echo $$ > %s || exit 125; ", shellQuote(filepath.Join(h, rel, "cgroup.procs")))
	}
	b.WriteString(`exec "$@"`)
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
