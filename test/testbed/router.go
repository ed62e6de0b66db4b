package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A slot's second subnet and the router between its two subnets (see
// HostOptions.SecondSubnet). The first subnet is 10.250.s.0/24 on bridge
// sctb<s>, the second 10.251.s.0/24 on bridge sctb<s>b; the test's
// namespace is .1 on both, the router .254 on both. The router is a
// network namespace of its own, held by a sleeping process in cgroup
// sctb<s>hr, plugged into the bridges by veths sctb<s>hra and sctb<s>hrb
// (eth0 and eth1 inside it). It forwards (ip_forward=1 in its namespace
// only: the machine's setting is left as it is), and hosts reach the other
// subnet through it, so the two subnets share no link.
const (
	firstSubnet  = "10.250"
	secondSubnet = "10.251"
	routerOctet  = 254
	// routerStartTimeout bounds starting the router's namespace and links.
	routerStartTimeout = time.Minute
)

// secondBridge is the bridge of the slot's second subnet.
func (s *slot) secondBridge() string { return fmt.Sprintf("sctb%db", s.index) }

// routerName is the router's cgroup and the prefix of its links in the
// test's namespace. It starts with hostPrefix, so the sweep removes them
// with the hosts' cgroups and links.
func (s *slot) routerName() string { return s.hostPrefix() + "r" }

// subnet is the first three octets of the slot's first or second subnet.
func (s *slot) subnet(second bool) string {
	if second {
		return fmt.Sprintf("%s.%d", secondSubnet, s.index)
	}
	return fmt.Sprintf("%s.%d", firstSubnet, s.index)
}

// twoSubnets reports whether the group has a second subnet and a router.
func (g *hostGroup) twoSubnets() bool { return len(g.opts.SecondSubnet) > 0 }

// onSecondSubnet reports whether host i goes on the second subnet.
func (g *hostGroup) onSecondSubnet(i int) bool { return slices.Contains(g.opts.SecondSubnet, i) }

// validateSecondSubnet checks that SecondSubnet names hosts 1..n, each once.
func validateSecondSubnet(hosts []int, n int) error {
	seen := map[int]bool{}
	for _, i := range hosts {
		if i < 1 || i > n {
			return fmt.Errorf("SecondSubnet: host %d: there are hosts 1 to %d", i, n)
		}
		if seen[i] {
			return fmt.Errorf("SecondSubnet: host %d is listed twice", i)
		}
		seen[i] = true
	}
	return nil
}

// createSecondBridge creates the second subnet's bridge with the test's
// namespace at .1 on it and lets it forward between its ports. The router's
// port gives it carrier (as the anchor does on the first bridge).
func (g *hostGroup) createSecondBridge() error {
	mac := fmt.Sprintf("02:5c:7b:01:%02x:01", g.slot.index)
	if err := ipCommand(fmt.Sprintf("link add %[1]s address %[3]s type bridge\naddr add %[2]s.1/24 dev %[1]s\nlink set %[1]s up\n",
		g.slot.secondBridge(), g.slot.subnet(true), mac)); err != nil {
		return err
	}
	return ensureForwardRule(g.slot.secondBridge())
}

// hostRoutes are the routes a host needs besides its default route when
// the group has two subnets: the other subnet through the router, and the
// test's address on the other bridge directly through the host's gateway
// (the test's namespace has both, so a host on either subnet reaches the
// other's gateway address without the router, as the hosts of the first
// subnet do).
func (g *hostGroup) hostRoutes(h *Host) string {
	if !g.twoSubnets() {
		return ""
	}
	second := g.onSecondSubnet(h.Index)
	other := g.slot.subnet(!second)
	return fmt.Sprintf("route add %s.0/24 via %s.%d\nroute add %s.1/32 via %s\n",
		other, g.slot.subnet(second), routerOctet, other, h.Gateway)
}

// startRouter starts the router's namespace in its own cgroup, turns on
// forwarding inside it, plugs it into both bridges and waits for its links.
func (g *hostGroup) startRouter() error {
	ctx, cancel := context.WithTimeout(context.Background(), routerStartTimeout)
	defer cancel()
	name := g.slot.routerName()
	if err := createCgroup(g.hiers, "/"+name); err != nil {
		return err
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create pipe: %w", err)
	}
	defer ready.Close()
	script := "set -e\nip link set lo up\necho 1 > /proc/sys/net/ipv4/ip_forward\necho ready >&3\nexec 3>&-\nexec sleep infinity\n"
	cmd := exec.Command("sh", "-c", attachScript(g.hiers, "/"+name), "sh", g.unshare, "--net", "--", "sh", "-c", script)
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.Env = hostEnv()
	g.router, err = startProcess("router namespace", cmd, g.routerLog())
	readyW.Close()
	if err != nil {
		return err
	}
	if err := waitReadyLine(ctx, ready); err != nil {
		if g.router.exited() {
			return fmt.Errorf("router: set up namespace: %w", g.router.exitError())
		}
		return fmt.Errorf("router: set up namespace: %w", err)
	}
	pid := g.router.pid()
	if err := ipCommand(fmt.Sprintf("link add %[1]sa type veth peer name eth0 netns %[2]d\nlink set %[1]sa master %[3]s up\n"+
		"link add %[1]sb type veth peer name eth1 netns %[2]d\nlink set %[1]sb master %[4]s up\n",
		name, pid, g.bridge, g.slot.secondBridge())); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if out, err := g.inRouter(ctx, "ip", "-batch", "-").
		input(fmt.Sprintf("addr add %s.%d/24 dev eth0\nlink set eth0 up\naddr add %s.%d/24 dev eth1\nlink set eth1 up\n",
			g.slot.subnet(false), routerOctet, g.slot.subnet(true), routerOctet)); err != nil {
		return fmt.Errorf("router: configure links: %w: %s", err, out)
	}
	if out, err := g.inRouter(ctx, "cat", "/proc/sys/net/ipv4/ip_forward").input(""); err != nil || strings.TrimSpace(out) != "1" {
		return fmt.Errorf("router: ip_forward in its namespace is %q, want 1 (%v)", strings.TrimSpace(out), err)
	}
	// A veth's end is up (has carrier) once both ends are.
	sys := func(link string) string { return filepath.Join("/sys/class/net", link, "operstate") }
	if err := waitOperUp(ctx, sys(name+"a"), sys(name+"b")); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	return nil
}

func (g *hostGroup) routerLog() string { return filepath.Join(g.slot.dir(), "router.log") }

// routerCmd is a command in the router's network namespace.
type routerCmd struct{ *exec.Cmd }

// inRouter builds a command that runs in the router's network namespace
// (and the test's others).
func (g *hostGroup) inRouter(ctx context.Context, name string, args ...string) routerCmd {
	full := append([]string{"--target", strconv.Itoa(g.router.pid()), "--net", "--", name}, args...)
	cmd := exec.CommandContext(ctx, g.nsenter, full...)
	cmd.Env = hostEnv()
	cmd.WaitDelay = execWaitDelay
	return routerCmd{cmd}
}

// input runs the command with stdin and returns its combined output.
func (c routerCmd) input(stdin string) (string, error) {
	c.Stdin = strings.NewReader(stdin)
	out, err := c.CombinedOutput()
	return string(out), err
}

// stopRouter kills the router's holder and anything else in its cgroup,
// which ends its namespace and with it both veths (the sweep that follows
// removes whatever is left by name).
func (g *hostGroup) stopRouter() error {
	var errs []error
	if g.router != nil {
		errs = append(errs, g.router.stop(0))
	}
	if g.twoSubnets() {
		errs = append(errs, killCgroup(g.hiers, "/"+g.slot.routerName()))
	}
	return errors.Join(errs...)
}
