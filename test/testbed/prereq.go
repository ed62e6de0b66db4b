package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Need names one prerequisite of the testbed, for Require.
type Need string

// The prerequisites. StartControlPlane and StartHosts require what they use
// themselves; tests call Require for anything else they run directly.
const (
	// NeedRoot: namespaces, mounts, cgroups and links need root.
	NeedRoot Need = "root"
	// NeedTestbin: the Kubernetes and etcd binaries and the test images
	// built by `make testbin`.
	NeedTestbin Need = "testbin"
	// NeedNamespaces: ip, unshare, nsenter and mount.
	NeedNamespaces Need = "namespaces"
	// NeedSSHD: the OpenSSH server.
	NeedSSHD Need = "sshd"
	// NeedContainerd: containerd with its ctr client and runc.
	NeedContainerd Need = "containerd"
	// NeedContainerd2: containerd v2.4.2, its ctr and its runc shim,
	// built by `make testbin` into containerd2/bin (HostOptions.Containerd2).
	NeedContainerd2 Need = "containerd2"
	// NeedDocker: dockerd and the docker client.
	NeedDocker Need = "docker"
	// NeedBusybox: a busybox binary on the machine (ping and nc for
	// network checks inside hosts).
	NeedBusybox Need = "busybox"
	// NeedChromium: Debian's chromium, the browser the console's tests
	// drive headless.
	NeedChromium Need = "chromium"
	// NeedVM: QEMU and the Debian 12 image `make vm-image` builds
	// (StartVM).
	NeedVM Need = "vm"
)

// KubeVersion is the Kubernetes version `make testbin` builds.
const KubeVersion = "v1.37.2"

// TestbinEnv names the environment variable that overrides where `make
// testbin` put its output.
const TestbinEnv = "SINGLECLOUD_TESTBIN"

// testbinFiles are the outputs of `make testbin` that the testbed uses.
func testbinFiles() []string {
	return []string{
		"bin/etcd", "bin/etcdctl", "bin/kube-apiserver", "bin/kube-controller-manager", "bin/kube-scheduler",
		"bin/kubelet", "bin/kube-proxy", "bin/pause", "bin/busybox",
		"images/" + kubeletArchive, "images/" + pauseArchive, "images/" + busyboxArchive, "images/" + flannelArchive,
		CNIPluginsRelease, CNIPluginsRelease + ".sha256", "cni/bridge", "cni/host-local", "cni/loopback", "cni/portmap",
	}
}

// Testbin returns the directory `make testbin` writes to: $SINGLECLOUD_TESTBIN
// or $HOME/.cache/singlecloud/testbin/v1.37.2. The error (ErrMissing) says
// to run `make testbin` when any output is missing; the directory is
// returned either way.
func Testbin() (string, error) {
	dir := os.Getenv(TestbinEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: cannot find the testbin cache (set %s or HOME): %w", ErrMissing, TestbinEnv, err)
		}
		dir = filepath.Join(home, ".cache", "singlecloud", "testbin", KubeVersion)
	}
	for _, f := range testbinFiles() {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return dir, fmt.Errorf("%w: %s is not built: run make testbin (or set %s)", ErrMissing, filepath.Join(dir, f), TestbinEnv)
		}
	}
	return dir, nil
}

// CI reports whether the tests run in CI (CI=true), where a missing
// prerequisite is a failure instead of a skip.
func CI() bool { return os.Getenv("CI") == "true" }

// Require checks each prerequisite. Outside CI the first missing one skips
// the test with one line saying how to get it; with CI=true it fails the
// test. It must be called from the test's goroutine.
func Require(t testing.TB, needs ...Need) {
	t.Helper()
	for _, n := range needs {
		if err := check(n); err != nil {
			if CI() {
				t.Fatalf("testbed: %v", err)
			} else {
				t.Skipf("testbed: %v", err)
			}
		}
	}
}

// check returns nil when the prerequisite is there, or an ErrMissing that
// says how to install it.
func check(n Need) error {
	switch n {
	case NeedRoot:
		if os.Geteuid() != 0 {
			return fmt.Errorf("%w: root: run the tests as root (sudo -E go test ...)", ErrMissing)
		}
		return nil
	case NeedTestbin:
		_, err := Testbin()
		return err
	case NeedNamespaces:
		return lookAll("apt-get install iproute2 util-linux mount", "ip", "unshare", "nsenter", "mount")
	case NeedSSHD:
		if _, err := sshdPath(); err != nil {
			return err
		}
		return nil
	case NeedContainerd:
		return lookAll("apt-get install containerd runc", "containerd", "ctr", "runc")
	case NeedContainerd2:
		return checkContainerd2()
	case NeedDocker:
		return lookAll("apt-get install docker.io", "dockerd", "docker")
	case NeedBusybox:
		return lookAll("apt-get install busybox-static", "busybox")
	case NeedChromium:
		_, err := Chromium()
		return err
	case NeedVM:
		return checkVM()
	}
	return fmt.Errorf("%w: unknown prerequisite %q", ErrMissing, n)
}

// lookAll checks that every program is on PATH (or in /usr/sbin and /sbin,
// which a non-root PATH may lack).
func lookAll(hint string, programs ...string) error {
	for _, p := range programs {
		if _, err := lookPath(p); err != nil {
			return fmt.Errorf("%w: %s not found: %s", ErrMissing, p, hint)
		}
	}
	return nil
}

func lookPath(program string) (string, error) {
	if p, err := exec.LookPath(program); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, program)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found", ErrMissing, program)
}

// sshdPath is the absolute path of sshd, which sshd requires (it re-executes
// itself for every connection).
func sshdPath() (string, error) {
	p, err := lookPath("sshd")
	if err != nil {
		return "", fmt.Errorf("%w: sshd not found: apt-get install openssh-server", ErrMissing)
	}
	return filepath.Abs(p)
}

// Chromium returns the path of the Chromium binary the console's tests
// drive, or an ErrMissing saying how to install it.
func Chromium() (string, error) {
	for _, p := range []string{"chromium", "chromium-browser"} {
		if path, err := lookPath(p); err == nil {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: chromium not found: apt-get install chromium", ErrMissing)
}
