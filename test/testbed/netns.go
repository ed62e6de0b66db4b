package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// privateDirs are the directories each host has its own copy of (bind
// mounts of Dir/fs/...), so that what is written there by one host's
// daemons and kubelet never meets another host's.
func privateDirs() []string {
	return []string{
		"/etc/kubernetes", "/etc/cni/net.d", "/var/lib/kubelet", "/var/lib/etcd", "/var/lib/cni",
		"/var/log/pods", "/var/log/containers",
		// Where containerd looks for CNI plugins by default (upstream's
		// and Debian's): empty, whatever the machine has there.
		"/opt/cni", "/usr/lib/cni",
		// Where zke installs the kubelet's binaries.
		"/opt/zke",
	}
}

// startNamespaces creates the host's directories and cgroups, starts the
// process that holds its namespaces, and plugs it into its subnet's bridge
// (with, on a group with two subnets, its routes to the other subnet).
func (g *hostGroup) startNamespaces(ctx context.Context, h *Host) error {
	dirs := []string{"run", "root", "tmp", "logs", "ssh", "files", "testbin", "sock", "ov/etc/upper", "ov/etc/work", "ov/var/upper", "ov/var/work",
		filepath.Join("tmp", strings.TrimPrefix(h.Dir, "/tmp/"))}
	for _, d := range privateDirs() {
		dirs = append(dirs, filepath.Join("fs", d))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(h.Dir, d), 0o755); err != nil {
			return fmt.Errorf("create host directory: %w", err)
		}
	}
	if err := os.Chmod(filepath.Join(h.Dir, "tmp"), 0o1777); err != nil {
		return fmt.Errorf("create host /tmp: %w", err)
	}
	for _, cg := range []string{"/daemons", "/docker", "/kubelet"} {
		if err := createCgroup(g.hiers, h.cgroup+cg); err != nil {
			return err
		}
	}
	files := map[string][]byte{"hosts": g.etcHosts, "resolv.conf": g.resolvConf, "hostname": []byte(h.Name + "\n")}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(h.Dir, "files", name), data, 0o644); err != nil {
			return fmt.Errorf("write host %s: %w", name, err)
		}
	}

	ready, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create pipe: %w", err)
	}
	defer ready.Close()
	cmd := exec.Command("sh", "-c", h.attach, "sh", g.unshare, "--net", "--mount", "--uts", "--propagation", "private",
		"--", "sh", "-c", g.namespaceScript(h))
	cmd.ExtraFiles = []*os.File{readyW} // fd 3: the script says "ready" there
	cmd.Env = hostEnv()
	h.holder, err = startProcess("namespaces of "+h.Name, cmd, filepath.Join(h.Dir, "logs", "namespaces.log"))
	readyW.Close()
	if err != nil {
		return err
	}
	if err := waitReadyLine(ctx, ready); err != nil {
		if h.holder.exited() {
			return fmt.Errorf("set up namespaces: %w", h.holder.exitError())
		}
		return fmt.Errorf("set up namespaces: %w", err)
	}

	veth := fmt.Sprintf("%s%d", g.slot.hostPrefix(), h.Index)
	if err := ipCommand(fmt.Sprintf("link add %s type veth peer name eth0 netns %d\nlink set %s master %s up\n",
		veth, h.holder.pid(), veth, h.bridge)); err != nil {
		return err
	}
	inside := h.Command(ctx, "ip", "-batch", "-")
	inside.Stdin = strings.NewReader(g.eth0Config(h))
	if out, err := inside.CombinedOutput(); err != nil {
		return fmt.Errorf("configure eth0 of %s: %w: %s", h.Name, err, out)
	}
	// Until the kernel's link watcher has seen the carrier of both ends,
	// frames sent through them are dropped, and a lost first ARP request
	// costs a one-second retransmission: wait for both to be up.
	if err := waitOperUp(ctx, filepath.Join("/sys/class/net", veth, "operstate"), h.Path("/sys/class/net/eth0/operstate")); err != nil {
		return err
	}
	// Nothing but the testbed has touched the namespaces yet: what Reboot
	// keeps is recorded now.
	return g.recordBoot(h)
}

// eth0Config is the ip -batch input that configures the host's eth0 and
// routes at start, and again at Reboot.
func (g *hostGroup) eth0Config(h *Host) string {
	return fmt.Sprintf("addr add %s/24 dev eth0\nlink set eth0 up\nroute add default via %s\n%s", h.Address, h.Gateway, g.hostRoutes(h))
}

// waitOperUp waits until every operstate file says "up".
func waitOperUp(ctx context.Context, files ...string) error {
	err := poll(ctx, func(context.Context) error {
		for _, f := range files {
			v, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if s := strings.TrimSpace(string(v)); s != "up" {
				return fmt.Errorf("%s: %s", f, s)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: link: %w", ErrNotReady, err)
	}
	return nil
}

// waitReadyLine waits for "ready" on r, for EOF (the script failed) or for
// ctx to end.
func waitReadyLine(ctx context.Context, r *os.File) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(hostStartTimeout)
	}
	if err := r.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("wait for namespaces: %w", err)
	}
	buf := make([]byte, 64)
	var got []byte
	for !strings.Contains(string(got), "ready") {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return fmt.Errorf("%w: namespaces: %w", ErrNotReady, err)
		}
	}
	return nil
}

// namespaceScript runs in the host's fresh network, mount and UTS
// namespaces (mounts private from the machine's) and prepares them: a sysfs
// of the host's network namespace with the machine's cgroup hierarchies
// mounted again (an `ip netns exec` /sys has none, and containerd, dockerd
// and kubelets need them); copy-on-write /etc and /var; the host's own /run,
// /root, /tmp and private directories (the testbin stays visible); its hostname, hosts and resolv.conf.
// Finally it makes every mount shared, as a containerised kubelet's
// rshared bind mounts need, says "ready" on fd 3 and sleeps to hold the
// namespaces until it is killed.
func (g *hostGroup) namespaceScript(h *Host) string {
	q := shellQuote
	d := func(rel string) string { return q(filepath.Join(h.Dir, rel)) }
	var s strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&s, format+"\n", args...) }
	line("set -e")
	line("mount -t sysfs sysfs /sys")
	for _, m := range g.mounts {
		if m.dir != cgroupRoot {
			line("mkdir -p %s", q(m.dir))
		}
		opts := ""
		if len(m.options) > 0 {
			opts = "-o " + q(strings.Join(m.options, ","))
		}
		line("mount -t %s %s %s %s", m.fstype, opts, m.fstype, q(m.dir))
	}
	for _, top := range []string{"etc", "var"} {
		line("mount -t overlay overlay -o lowerdir=/%s,upperdir=%s,workdir=%s /%s", top, d("ov/"+top+"/upper"), d("ov/"+top+"/work"), top)
	}
	for _, p := range privateDirs() {
		line("mkdir -p %s && mount --bind %s %s", q(p), d("fs"+p), q(p))
	}
	// The testbin (often under /root) stays visible at its path: held at
	// Dir/testbin while /root, /run and /tmp are replaced, then bound back.
	if g.sharedTestbin != "" {
		line("mount --bind %s %s", q(g.sharedTestbin), d("testbin"))
	}
	line("mount --bind %s /root", d("root"))
	line("mount --bind %s /run", d("run"))
	if h.sock.Path != "" {
		// containerd's socket directory, private to the host.
		dir := filepath.Dir(h.sock.Path)
		line("mkdir -p %s && mount --bind %s %s", q(dir), d("sock"), q(dir))
	}
	// The host's own /tmp, with the host's directory at its usual path.
	line("mount --rbind %s %s", q(h.Dir), d(filepath.Join("tmp", strings.TrimPrefix(h.Dir, "/tmp/"))))
	line("mount --rbind %s /tmp", d("tmp"))
	if g.sharedTestbin != "" {
		line("mkdir -p %s && mount --bind %s %s", q(g.sharedTestbin), d("testbin"), q(g.sharedTestbin))
	}
	line("rm -f /etc/hosts /etc/resolv.conf /etc/hostname")
	for _, f := range []string{"hosts", "resolv.conf", "hostname"} {
		line("cp %s /etc/%s", d("files/"+f), f)
	}
	line("hostname %s", q(h.Name))
	// With UsePAM no, sshd refuses a locked account ("!" password).
	line("if grep -q '^root:!' /etc/shadow; then sed -i 's/^root:![^:]*:/root:*:/' /etc/shadow; fi")
	s.WriteString(g.runScript(h))
	line("ip link set lo up")
	line("mount --make-rshared /")
	line("echo ready >&3")
	line("exec 3>&-")
	line("exec sleep infinity")
	return s.String()
}

// runScript fills the host's empty /run as at start, and again after
// Reboot emptied it: sshd's privilege separation directory, /run/lock and,
// when asked, the default containerd socket path as a symlink to the
// moved socket.
func (g *hostGroup) runScript(h *Host) string {
	s := "mkdir -p -m 0755 /run/sshd /run/lock\n"
	if h.sock.Path != "" && h.sock.Link {
		q := shellQuote
		s += fmt.Sprintf("mkdir -p %s && ln -sfn %s %s\n", q(filepath.Dir(defaultContainerdSocket)), q(h.sock.Path), q(defaultContainerdSocket))
	}
	return s
}
