package testbed

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// VMEnv names the environment variable that overrides where `make
// vm-image` (test/vm/build.sh) put the virtual machine's image.
const VMEnv = "SINGLECLOUD_VM"

// Bounds of a virtual machine's life. QEMU emulates the CPU (TCG: the
// machine's /dev/kvm cannot run a stock kernel), so everything in it is
// several times slower than on a testbed host.
const (
	// vmBootTimeout bounds the boot to an answering sshd: about 20 s on
	// a quiet machine, minutes when another build shares the cores.
	vmBootTimeout = 5 * time.Minute
	// vmMemoryMiB is the machine's memory: Docker, containerd, the
	// kubelet and a few pods fit with room for the page cache.
	vmMemoryMiB = 3072
	// vmDialTimeout bounds one SSH connection attempt.
	vmDialTimeout = 10 * time.Second
)

// vmFiles are the outputs of test/vm/build.sh that StartVM boots.
var vmFiles = []string{"vmlinuz", "initrd.img", "rootfs.img"}

// VMImageDir returns the directory `make vm-image` writes to: $SINGLECLOUD_VM
// or $HOME/.cache/singlecloud/vm/debian12. The error (ErrMissing) says to
// run `make vm-image` when a file is missing; the directory is returned
// either way.
func VMImageDir() (string, error) {
	dir := os.Getenv(VMEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: cannot find the VM image cache (set %s or HOME): %w", ErrMissing, VMEnv, err)
		}
		dir = filepath.Join(home, ".cache", "singlecloud", "vm", "debian12")
	}
	for _, f := range vmFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return dir, fmt.Errorf("%w: %s is not built: run make vm-image (or set %s)", ErrMissing, filepath.Join(dir, f), VMEnv)
		}
	}
	return dir, nil
}

// checkVM is NeedVM's check: QEMU and the image.
func checkVM() error {
	if err := lookAll("apt-get install qemu-system-x86 qemu-utils", "qemu-system-x86_64", "qemu-img"); err != nil {
		return err
	}
	_, err := VMImageDir()
	return err
}

// VM is a Debian 12 virtual machine booted with QEMU from the image `make
// vm-image` built: systemd, cgroup v2, Debian's containerd and Docker as
// their packages configure them, OpenSSH, nothing else. It sits on the
// bridge of a StartHosts group's first subnet as one more host of it:
// host<N> at 10.250.s.(10+N), N one past the group's hosts, with the
// group's SSH key authorised for root. Its disk is a copy-on-write overlay
// of the image, dropped with the machine.
type VM struct {
	// Name is its hostname, host<N>; Address its IPv4 address.
	Name    string
	Address string
	// Gateway is the bridge's address, the machine's default route.
	Gateway string
	// Dir holds its overlay disk and logs (console.log: the serial
	// console; qemu.log: QEMU's own output).
	Dir string

	signer ssh.Signer
	tap    string
	qemu   *process
	// degraded is what systemd said at the end of the boot when a unit
	// failed ("" when every unit started), for the test's log.
	degraded string
}

// StartVM boots a VM beside hosts (the whole slice StartHosts returned)
// and waits until its sshd answers: StartVMs with one machine.
func StartVM(t testing.TB, hosts []*Host) *VM {
	t.Helper()
	return StartVMs(t, hosts, 1)[0]
}

// StartVMs boots n VMs side by side beside hosts (the whole slice
// StartHosts returned), host<len(hosts)+1> onwards, and waits until each
// one's sshd answers. It stops the machines and removes their links in
// t.Cleanup, before the hosts' cleanup removes their bridge. It fails the
// test when a machine does not boot, and must be called from the test's
// goroutine.
func StartVMs(t testing.TB, hosts []*Host, n int) []*VM {
	t.Helper()
	Require(t, NeedRoot, NeedVM)
	if len(hosts) == 0 || n < 1 || len(hosts)+n > MaxHosts {
		t.Fatalf("testbed: StartVMs needs the hosts of a StartHosts call and 1 to %d machines", MaxHosts-len(hosts))
	}
	img, _ := VMImageDir()
	first := hosts[0]
	vms := make([]*VM, n)
	for i := range vms {
		idx := len(hosts) + 1 + i
		v := &VM{
			Name:    fmt.Sprintf("host%d", idx),
			Address: fmt.Sprintf("%s.%d", first.Gateway[:strings.LastIndexByte(first.Gateway, '.')], 10+idx),
			Gateway: first.Gateway,
			Dir:     t.TempDir(),
			signer:  first.ClientSigner,
			// The slot's host prefix: a sweep after a crash removes it.
			tap: fmt.Sprintf("%sh%d", first.bridge, idx),
		}
		vms[i] = v
		t.Cleanup(func() {
			if err := v.stop(); err != nil {
				t.Errorf("testbed: stop %s: %v", v.Name, err)
			}
		})
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), vmBootTimeout)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, v := range vms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.boot(ctx, img, first.bridge); err != nil {
				errs[i] = fmt.Errorf("%s: %w", v.Name, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("testbed: start VMs: %v", err)
	}
	for _, v := range vms {
		t.Logf("testbed: %s (Debian 12 VM, QEMU TCG) at %s", v.Name, v.Address)
		if v.degraded != "" {
			t.Logf("testbed: %s booted with a failed unit:\n%s", v.Name, v.degraded)
		}
	}
	t.Logf("testbed: %d VM(s) answering SSH after %s", n, time.Since(start).Round(time.Millisecond))
	return vms
}

// boot creates the overlay and the tap link, starts QEMU and waits for
// sshd.
func (v *VM) boot(ctx context.Context, img, bridge string) error {
	overlay := filepath.Join(v.Dir, "disk.qcow2")
	if out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw",
		"-b", filepath.Join(img, "rootfs.img"), overlay).CombinedOutput(); err != nil {
		return fmt.Errorf("create the overlay disk: %w: %s", err, out)
	}
	if err := ipCommand(fmt.Sprintf("tuntap add dev %s mode tap\nlink set %s master %s up\n", v.tap, v.tap, bridge)); err != nil {
		return err
	}
	dns := "1.1.1.1" // never reached: the tests' names resolve through their own servers
	if ns := firstNameserver(); ns != "" {
		dns = ns
	}
	key := v.signer.PublicKey()
	cmdline := strings.Join([]string{
		"root=LABEL=root", "rw", "console=ttyS0", "net.ifnames=0", "panic=-1",
		"vm.addr=" + v.Address + "/24", "vm.gw=" + v.Gateway, "vm.dns=" + dns, "vm.name=" + v.Name,
		"vm.key=" + key.Type() + ":" + base64.StdEncoding.EncodeToString(key.Marshal()),
	}, " ")
	cmd := exec.Command("qemu-system-x86_64",
		"-machine", "q35,accel=tcg", "-cpu", "max", "-smp", "2", "-m", fmt.Sprint(vmMemoryMiB),
		"-display", "none", "-monitor", "none", "-no-reboot",
		"-kernel", filepath.Join(img, "vmlinuz"), "-initrd", filepath.Join(img, "initrd.img"), "-append", cmdline,
		"-drive", "file="+overlay+",if=virtio,format=qcow2,cache=unsafe",
		"-netdev", "tap,id=n0,ifname="+v.tap+",script=no,downscript=no",
		"-device", "virtio-net-pci,netdev=n0,mac="+vmMAC(v.Address),
		"-serial", "file:"+filepath.Join(v.Dir, "console.log"))
	var err error
	if v.qemu, err = startProcess("qemu of "+v.Name, cmd, filepath.Join(v.Dir, "qemu.log")); err != nil {
		return err
	}
	err = poll(ctx, func(ctx context.Context) error {
		if v.qemu.exited() {
			return v.qemu.exitError() // wraps ErrExited: polling stops
		}
		// Early in the boot sshd may run a command and lose its
		// output: only an echo that comes back counts.
		out, err := v.Run(ctx, "echo ready")
		if err == nil && strings.TrimSpace(out) != "ready" {
			err = fmt.Errorf("echo over SSH answered %q", out)
		}
		return err
	})
	if err == nil {
		// Then the boot's end, as a user's machine would be met: every
		// unit started ("degraded" names a failed one, shown below).
		var out string
		out, err = v.Run(ctx, "systemctl is-system-running --wait; s=$?; systemctl --failed --no-legend --plain; exit $s")
		switch state := strings.Fields(out); {
		case err == nil:
		case len(state) > 0 && state[0] == "degraded":
			v.degraded, err = out, nil
		default:
			err = fmt.Errorf("systemctl is-system-running --wait: %w: %s", err, out)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s over SSH: %w; end of its console:\n%s", ErrNotReady, v.Address, err,
			tailFile(filepath.Join(v.Dir, "console.log"), logTailLines))
	}
	return nil
}

// vmMAC is a locally administered MAC address derived from the machine's
// address, unique on its bridge.
func vmMAC(addr string) string {
	ip := net.ParseIP(addr).To4()
	return fmt.Sprintf("52:54:%02x:%02x:%02x:%02x", ip[0], ip[1], ip[2], ip[3])
}

// firstNameserver is the first nameserver of this machine's resolv.conf,
// the DNS server the machine's hosts are given too.
func firstNameserver() string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" && net.ParseIP(f[1]) != nil && !net.ParseIP(f[1]).IsLoopback() {
			return f[1]
		}
	}
	return ""
}

// dial opens an SSH connection to root on the machine. Its host key is
// not checked: the machine was booted by this test a moment ago.
func (v *VM) dial(ctx context.Context) (*ssh.Client, error) {
	d := net.Dialer{Timeout: vmDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(v.Address, "22"))
	if err != nil {
		return nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(vmDialTimeout))
	cc, chans, reqs, err := ssh.NewClientConn(conn, v.Address, &ssh.ClientConfig{
		User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(v.signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), //nolint:gosec // a machine this test just booted
		Timeout:         vmDialTimeout,
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), nil
}

// Run runs script with sh on the machine as root and returns its combined
// output; ctx bounds it.
func (v *VM) Run(ctx context.Context, script string) (string, error) {
	return v.RunInput(ctx, script, nil)
}

// RunInput is Run with in as the script's standard input (nil: none).
func (v *VM) RunInput(ctx context.Context, script string, in io.Reader) (string, error) {
	c, err := v.dial(ctx)
	if err != nil {
		return "", fmt.Errorf("ssh %s: %w", v.Name, err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", fmt.Errorf("ssh %s: %w", v.Name, err)
	}
	defer s.Close()
	// One buffer for both streams, behind a lock: the session copies
	// each in a goroutine of its own, and a bare bytes.Buffer's ReadFrom
	// on stderr would drop what stdout wrote meanwhile.
	var out lockedBuffer
	s.Stdout, s.Stderr, s.Stdin = &out, &out, in
	done := make(chan error, 1)
	go func() { done <- s.Run(script) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		c.Close()
		<-done
		err = ctx.Err()
	}
	return out.String(), err
}

// lockedBuffer is a bytes.Buffer that several goroutines write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p under the lock.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// stop powers the machine off (QEMU exits on SIGTERM, as a pulled plug)
// and removes its link.
func (v *VM) stop() error {
	var errs []error
	if v.qemu != nil {
		errs = append(errs, v.qemu.stop(stopGrace))
	}
	if linkExists(v.tap) {
		errs = append(errs, ipCommand("link del "+v.tap+"\n"))
	}
	return errors.Join(errs...)
}
