package testbed

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// hostGroup is the state of one StartHosts call: its slot (subnet, bridge,
// names), its hosts and what its cleanup must undo.
type hostGroup struct {
	t      testing.TB
	opts   HostOptions
	slot   *slot
	bridge string
	mounts []cgroupMount
	hiers  []string
	hosts  []*Host
	router *process // holds the router's namespace, with SecondSubnet

	nsenter, unshare, sshd string
	testbin                string // set when a runtime needs the images
	sharedTestbin          string // the testbin directory, if it exists, made visible in hosts

	clientSigner  ssh.Signer
	clientKeyPEM  []byte
	authorizedKey []byte
	etcHosts      []byte
	resolvConf    []byte
	sysctls       sysctls
}

// newHostGroup claims a slot, sweeps what a dead test binary may have left
// in it, and creates the bridge. A non-nil group must be cleaned up even
// when an error is returned.
func newHostGroup(t testing.TB, n int, opts HostOptions) (*hostGroup, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	s, err := acquireSlot()
	if err != nil {
		return nil, err
	}
	g := &hostGroup{t: t, opts: opts, slot: s, bridge: s.bridge(), mounts: mounts, hiers: hierarchies(mounts)}
	if err := s.sweep(g.hiers); err != nil {
		return g, fmt.Errorf("remove leftovers of an earlier test in slot %d: %w", s.index, err)
	}
	if err := sweepStale(g.hiers, s.index); err != nil {
		return g, fmt.Errorf("remove leftovers of earlier tests: %w", err)
	}
	if g.sysctls, err = snapshotSysctls(); err != nil {
		return g, err
	}
	for _, p := range []struct {
		path *string
		name string
	}{{&g.nsenter, "nsenter"}, {&g.unshare, "unshare"}} {
		if *p.path, err = lookPath(p.name); err != nil {
			return g, err
		}
	}
	if g.sshd, err = sshdPath(); err != nil {
		return g, err
	}
	if opts.Containerd {
		if g.testbin, err = Testbin(); err != nil {
			return g, err
		}
	}
	if dir, _ := Testbin(); dir != "" {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			g.sharedTestbin = dir
		}
	}
	if err := g.newClientKey(); err != nil {
		return g, err
	}
	if err := s.makeDir(); err != nil {
		return g, err
	}
	// A bridge takes the lowest MAC of its ports unless it has one set, so
	// without a fixed one its address would change as hosts join and the
	// hosts' ARP entries for the gateway would go stale.
	// An empty bridge has no carrier, and the kernel activates it (until
	// then it drops what is sent through it) only on its next link-watch
	// run, up to a second after the first host joins. An anchor port
	// (sctb<s>h0, a veth whose peer stays in the test's namespace) gives
	// it carrier now, and StartHosts waits for that.
	mac := fmt.Sprintf("02:5c:7b:00:%02x:01", s.index)
	anchor := s.hostPrefix() + "0"
	if err := ipCommand(fmt.Sprintf("link add %[1]s address %[3]s type bridge\naddr add %[2]s/24 dev %[1]s\nlink set %[1]s up\n"+
		"link add %[4]s type veth peer name %[4]sp\nlink set %[4]s master %[1]s up\nlink set %[4]sp up\n",
		g.bridge, g.gateway(), mac, anchor)); err != nil {
		return g, err
	}
	if err := ensureForwardRule(g.bridge); err != nil {
		return g, err
	}
	if g.twoSubnets() {
		if err := g.createSecondBridge(); err != nil {
			return g, err
		}
	}
	g.resolvConf, err = os.ReadFile("/etc/resolv.conf")
	if err != nil {
		g.resolvConf = []byte("# no resolver: the testbed is offline\n")
	}
	var hostsFile strings.Builder
	hostsFile.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	g.hosts = make([]*Host, n)
	for i := range g.hosts {
		h := g.newHost(i + 1)
		if s, ok := opts.ContainerdSockets[i+1]; ok {
			if err := s.validate(); err != nil {
				return g, fmt.Errorf("host%d: %w", i+1, err)
			}
			h.sock = s
		}
		h.ContainerdSocketPath = h.sock.inside()
		h.Ctr = "ctr"
		if slices.Contains(opts.Containerd2, i+1) {
			h.Containerd2 = true
			h.Ctr = filepath.Join(containerd2Bin(g.testbin), "ctr")
		}
		g.hosts[i] = h
		fmt.Fprintf(&hostsFile, "%s\t%s\n", h.Address, h.Name)
	}
	g.etcHosts = []byte(hostsFile.String())
	return g, nil
}

// bridgeUpTimeout bounds the wait for the bridge's activation, at most
// one link-watch period (a second) after its anchor port came up.
const bridgeUpTimeout = 10 * time.Second

// waitBridge waits until the bridges are operationally up.
func (g *hostGroup) waitBridge() error {
	ctx, cancel := context.WithTimeout(context.Background(), bridgeUpTimeout)
	defer cancel()
	files := []string{filepath.Join("/sys/class/net", g.bridge, "operstate")}
	if g.twoSubnets() {
		files = append(files, filepath.Join("/sys/class/net", g.slot.secondBridge(), "operstate"))
	}
	return waitOperUp(ctx, files...)
}

func (g *hostGroup) gateway() string { return g.slot.subnet(false) + ".1" }

// newHost fills in a host's names and addresses; nothing is created yet.
func (g *hostGroup) newHost(i int) *Host {
	cg := fmt.Sprintf("/%s%d", g.slot.hostPrefix(), i)
	second := g.onSecondSubnet(i)
	bridge := g.bridge
	if second {
		bridge = g.slot.secondBridge()
	}
	return &Host{
		Name:         fmt.Sprintf("host%d", i),
		Index:        i,
		Address:      fmt.Sprintf("%s.%d", g.slot.subnet(second), 10+i),
		Gateway:      g.slot.subnet(second) + ".1",
		bridge:       bridge,
		ClientSigner: g.clientSigner,
		ClientKeyPEM: g.clientKeyPEM,
		Dir:          filepath.Join(g.slot.dir(), fmt.Sprintf("h%d", i)),
		CgroupRoot:   cg + "/kubelet",
		cgroup:       cg,
		attach:       attachScript(g.hiers, cg+"/daemons"),
		nsenter:      g.nsenter,
	}
}

// newClientKey generates the key authorised for root on every host.
func (g *hostGroup) newClientKey() error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate SSH client key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "singlecloud-testbed")
	if err != nil {
		return fmt.Errorf("encode SSH client key: %w", err)
	}
	if g.clientSigner, err = ssh.NewSignerFromKey(priv); err != nil {
		return fmt.Errorf("SSH client key: %w", err)
	}
	g.clientKeyPEM = pem.EncodeToMemory(block)
	g.authorizedKey = ssh.MarshalAuthorizedKey(g.clientSigner.PublicKey())
	return nil
}

// cleanup undoes the group in order: each host's processes, pods and
// daemons, then the slot's cgroups, links and directory, then the kernel
// settings, and finally gives the slot back. A failed test first gets the
// end of every log.
func (g *hostGroup) cleanup() {
	if g.t.Failed() {
		g.printLogs()
	}
	var errs []error
	for i := len(g.hosts) - 1; i >= 0; i-- {
		if err := g.hosts[i].stop(g.hiers); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", g.hosts[i].Name, err))
		}
	}
	if err := g.stopRouter(); err != nil {
		errs = append(errs, err)
	}
	if err := g.slot.sweep(g.hiers); err != nil {
		errs = append(errs, err)
	}
	if g.sysctls != nil {
		errs = append(errs, g.sysctls.restore())
	}
	g.slot.release()
	if err := errors.Join(errs...); err != nil {
		g.t.Errorf("testbed: clean up hosts: %v", err)
	}
}

// printLogs logs the end of every log of every host, and the router's.
func (g *hostGroup) printLogs() {
	if g.router != nil {
		g.t.Logf("testbed: end of %s:\n%s", g.routerLog(), tailFile(g.routerLog(), logTailLines))
	}
	for _, h := range g.hosts {
		logs, _ := filepath.Glob(filepath.Join(h.Dir, "logs", "*.log"))
		for _, l := range logs {
			g.t.Logf("testbed: end of %s:\n%s", l, tailFile(l, logTailLines))
		}
	}
}

// stop stops what runs in the host, in order: processes of Start (a
// kubelet would restart pods), then pods and containers, then the daemons
// by PID, then anything left in the host's cgroup (shims, SSH sessions),
// which ends the namespaces with their mounts and links.
func (h *Host) stop(hiers []string) error {
	if h.holder == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	errs = append(errs, stopAll(h.started, stopGrace))
	errs = append(errs, killCgroup(hiers, h.CgroupRoot), killCgroup(hiers, h.cgroup+"/docker"))
	errs = append(errs, stopAll(h.daemons, stopGrace))
	errs = append(errs, killCgroup(hiers, h.cgroup))
	errs = append(errs, h.holder.stop(0))
	return errors.Join(errs...)
}
