package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kubeletSysctls are the machine-wide (not per network namespace) kernel
// settings a kubelet sets at start when protectKernelDefaults is off.
func kubeletSysctls() []string {
	return []string{
		"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	}
}

// sysctls is a snapshot of kernel settings, by /proc/sys path.
type sysctls map[string]string

// snapshotSysctls records the current value of every kubelet sysctl.
func snapshotSysctls() (sysctls, error) {
	snap := sysctls{}
	for _, name := range kubeletSysctls() {
		path := filepath.Join("/proc/sys", name)
		v, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		snap[path] = strings.TrimSpace(string(v))
	}
	return snap, nil
}

// restore writes back every setting that changed since the snapshot.
func (s sysctls) restore() error {
	var errs []error
	for path, want := range s {
		v, err := os.ReadFile(path)
		if err == nil && strings.TrimSpace(string(v)) == want {
			continue
		}
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s to %s: %w", path, want, err))
		}
	}
	return errors.Join(errs...)
}
