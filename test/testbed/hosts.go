package testbed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Host limits and bounds.
const (
	// MaxHosts is the most hosts one StartHosts call can start: host i
	// gets 10.250.s.(10+i) (or 10.251.s.(10+i), see SecondSubnet) and the
	// subnet is a /24 whose .1 is the test's namespace and .254 the router.
	MaxHosts = 200
	// hostStartTimeout bounds starting one host, images included (loading
	// the 480 MB kubernetes image into containerd and Docker dominates).
	hostStartTimeout = 3 * time.Minute
	// execWaitDelay bounds how long Exec waits for output after the
	// command exited, when a background child keeps its output open.
	execWaitDelay = 5 * time.Second
	// parallelHosts and parallelRuntimeHosts limit how many hosts start at
	// once: starting sshd is mostly waiting, loading images is disk and CPU.
	parallelHosts        = 8
	parallelRuntimeHosts = 2
)

// HostOptions says what runs in every host of a StartHosts call. The zero
// value starts sshd only, which is fast (no testbin needed).
type HostOptions struct {
	// Containerd starts containerd with the CRI plugin, its CNI section
	// as the package ships it (configs from /etc/cni/net.d, plugins from
	// /opt/cni/bin, or /usr/lib/cni with Debian's containerd), and loads
	// the images into its k8s.io namespace. Both plugin directories are
	// the host's own and start empty, as on a machine without
	// containernetworking-plugins: zke installs the plugins.
	Containerd bool
	// Docker starts dockerd on the host's containerd (so it implies
	// Containerd) and loads the images into it.
	Docker bool
	// Images lists the test images to load (ClusterImages, PauseImage,
	// BusyboxImage, CoreDNSImage, ...); nil loads AllImages. With Docker they
	// go into dockerd (all but CoreDNSImage and FlannelImage) and
	// containerd's k8s.io namespace, which only a kubelet's pods use, gets
	// PauseImage and the pod images (BusyboxImage, CoreDNSImage,
	// FlannelImage); without Docker they go
	// into containerd, which always gets PauseImage too.
	Images []string
	// NoImages loads no image at all.
	NoImages bool
	// ContainerdSockets moves containerd's socket out of /run on the
	// hosts it lists, by Index (see ContainerdSocket); the others keep
	// the default /run/containerd/containerd.sock.
	ContainerdSockets map[int]ContainerdSocket
	// SecondSubnet lists the hosts, by Index, that go on the slot's second
	// subnet instead of its first: host i then gets 10.251.s.(10+i) on
	// bridge sctb<s>b, with Gateway 10.251.s.1, instead of 10.250.s.(10+i)
	// on sctb<s> with Gateway 10.250.s.1 (s is the slot, the third octet
	// of every address of the call). The two subnets share no link: a
	// router, a network namespace of its own at 10.250.s.254 and
	// 10.251.s.254 that forwards only inside itself, routes between them,
	// and every host has a route to the other subnet via the router's
	// address on its own subnet. A host's default route stays its Gateway,
	// the test's namespace, which has an address on both bridges and
	// reaches every host directly (a host reaches the test's address on
	// the other bridge directly too, through its Gateway). So hosts on
	// different subnets reach each other only through the router, and a
	// route "via" a host of the other subnet is refused, as on a routed
	// network (flannel's host-gw fails, VXLAN works). The machine's
	// ip_forward is not touched. Empty (the default): every host is on the
	// first subnet and there is no second bridge and no router.
	SecondSubnet []int
	// Containerd2 lists the hosts, by Index, that run containerd
	// v2.4.2 (Containerd2Version, built by `make testbin`) instead of
	// Debian's 1.6; it implies Containerd. Their configuration sets only
	// what each host needs of its own (root, state, socket, runc's root:
	// containerd2.go) and leaves the rest, the CRI plugin included, at
	// containerd 2's defaults: CNI from /etc/cni/net.d and /opt/cni/bin,
	// the cgroupfs driver, the sandbox image Containerd2SandboxImage
	// (loaded with PauseImage). The socket is where it is on the other
	// hosts (ContainerdSocketPath); its runc shim is containerd 2's, its
	// runc Debian's. Host.Ctr is the ctr that matches each host's
	// containerd. Empty (the default): every host runs Debian's 1.6.
	Containerd2 []int
}

// Host is one Linux host: its own network, mount and UTS namespaces,
// reachable at Address over a bridge, with sshd on port 22 and, as asked,
// containerd and dockerd. Its methods may be called from any goroutine.
type Host struct {
	// Name is the hostname, host<Index>.
	Name string
	// Index is the host's number in its StartHosts call, from 1.
	Index int
	// Address is the host's IPv4 address, 10.250.s.(10+Index), or
	// 10.251.s.(10+Index) on the second subnet (HostOptions.SecondSubnet).
	Address string
	// Gateway is the address of the host's bridge in the test's
	// namespace (10.250.s.1, or 10.251.s.1 on the second subnet), the
	// host's default route.
	Gateway string
	// HostPublicKey is sshd's host key.
	HostPublicKey ssh.PublicKey
	// ClientSigner is the key authorised for root on every host of the
	// StartHosts call; ClientKeyPEM is the same key in OpenSSH PEM form.
	ClientSigner ssh.Signer
	ClientKeyPEM []byte
	// Dir is the host's directory, at the same path inside the host and
	// in the test's namespace. Logs are in Dir/logs.
	Dir string
	// ContainerdSocket and DockerSocket are the daemons' sockets as seen
	// from the test's namespace (inside the host they are at the default
	// /run/containerd/containerd.sock and /var/run/docker.sock); empty
	// when the daemon was not asked for.
	ContainerdSocket string
	DockerSocket     string
	// ContainerdSocketPath is where containerd listens inside the host:
	// /run/containerd/containerd.sock unless HostOptions.ContainerdSockets
	// moved it.
	ContainerdSocketPath string
	// Containerd2 reports whether the host runs containerd v2.4.2
	// (HostOptions.Containerd2) instead of Debian's 1.6.
	Containerd2 bool
	// Ctr is the ctr client of the host's containerd: "ctr" (Debian's
	// 1.6, in PATH inside the host and in the test's namespace), or on
	// containerd 2 the absolute path of containerd 2's ctr in the testbin,
	// the same inside the host and in the test's namespace.
	Ctr string
	// CgroupRoot is the cgroup (in every hierarchy) a kubelet on this host
	// must use as its cgroupRoot; two kubelets on one machine with the same
	// root kill each other's pods. It exists in every hierarchy.
	CgroupRoot string

	sock    ContainerdSocket // where containerd listens, as asked
	cgroup  string           // the host's cgroup, parent of daemons, CgroupRoot and Docker's
	attach  string           // shell prologue that moves itself into the daemons cgroup
	nsenter string
	bridge  string   // the bridge of the host's subnet
	holder  *process // keeps the namespaces alive

	boot *bootState // what Reboot keeps and restores, recorded at start

	mu      sync.Mutex
	sshd    *process   // also in daemons
	daemons []*process // sshd, containerd, dockerd, in start order
	started []*process // Start's processes
}

// StartHosts starts n hosts on a bridge of their own (two bridges and a
// router between them with HostOptions.SecondSubnet) and stops them, in
// order, in t.Cleanup. Hosts of one call reach each other and the test's
// namespace; separate calls get separate subnets. It fails the test when a
// host does not start, and must be called from the test's goroutine.
func StartHosts(t testing.TB, n int, opts HostOptions) []*Host {
	t.Helper()
	if opts.Docker || len(opts.Containerd2) > 0 {
		opts.Containerd = true
	}
	needs := []Need{NeedRoot, NeedNamespaces, NeedSSHD}
	if opts.Containerd {
		needs = append(needs, NeedContainerd, NeedTestbin)
	}
	if len(opts.Containerd2) > 0 {
		needs = append(needs, NeedContainerd2)
	}
	if opts.Docker {
		needs = append(needs, NeedDocker)
	}
	Require(t, needs...)
	if n < 1 || n > MaxHosts {
		t.Fatalf("testbed: StartHosts(%d): between 1 and %d hosts", n, MaxHosts)
	}
	if err := validateSecondSubnet(opts.SecondSubnet, n); err != nil {
		t.Fatalf("testbed: StartHosts: %v", err)
	}
	if err := validateHostList("Containerd2", opts.Containerd2, n); err != nil {
		t.Fatalf("testbed: StartHosts: %v", err)
	}
	start := time.Now()
	g, err := newHostGroup(t, n, opts)
	if g != nil {
		t.Cleanup(g.cleanup)
	}
	if err != nil {
		t.Fatalf("testbed: start hosts: %v", err)
	}
	if g.twoSubnets() {
		if err := g.startRouter(); err != nil {
			t.Fatalf("testbed: start hosts: %v", err)
		}
	}
	if err := g.waitBridge(); err != nil {
		t.Fatalf("testbed: start hosts: %v", err)
	}
	if err := g.startAll(); err != nil {
		t.Fatalf("testbed: start hosts: %v", err)
	}
	where := fmt.Sprintf("%s (%s.0/24)", g.bridge, g.slot.subnet(false))
	if g.twoSubnets() {
		where += fmt.Sprintf(" and %s (%s.0/24, hosts %v), routed by %s.%d/%s.%d", g.slot.secondBridge(), g.slot.subnet(true),
			g.opts.SecondSubnet, g.slot.subnet(false), routerOctet, g.slot.subnet(true), routerOctet)
	}
	t.Logf("testbed: %d host(s) on %s ready in %s", n, where, time.Since(start).Round(time.Millisecond))
	return g.hosts
}

// startAll starts every host, a few at a time. Each worker fills only its
// own element of g.hosts.
func (g *hostGroup) startAll() error {
	limit := parallelHosts
	if g.opts.Containerd {
		limit = parallelRuntimeHosts
	}
	sem := make(chan struct{}, limit)
	errs := make([]error, len(g.hosts))
	var wg sync.WaitGroup
	for i := range g.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), hostStartTimeout)
			defer cancel()
			errs[i] = g.startHost(ctx, g.hosts[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startHost brings up one host: namespaces, link, sshd, runtimes, images.
// It logs how long each step took.
func (g *hostGroup) startHost(ctx context.Context, h *Host) error {
	steps := []struct {
		name string
		on   bool
		run  func(context.Context, *Host) error
	}{
		{"namespaces", true, g.startNamespaces},
		{"sshd", true, g.startSSHD},
		{"containerd", g.opts.Containerd, g.startContainerd},
		{"dockerd", g.opts.Docker, g.startDocker},
		{"images", g.opts.Containerd && !g.opts.NoImages, g.loadImages},
	}
	var took []string
	for _, step := range steps {
		if !step.on {
			continue
		}
		start := time.Now()
		if err := step.run(ctx, h); err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
		took = append(took, fmt.Sprintf("%s %s", step.name, time.Since(start).Round(time.Millisecond)))
	}
	if g.opts.Containerd {
		g.t.Logf("testbed: %s at %s: %s", h.Name, h.Address, strings.Join(took, ", "))
	}
	return nil
}
