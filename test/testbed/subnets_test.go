package testbed_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestHostsOnTwoSubnetsRouteButShareNoLink: with SecondSubnet, hosts on the
// two subnets reach each other through the router only (a route "via" a
// host of the other subnet is refused, so flannel's host-gw cannot work and
// VXLAN must), the test's namespace reaches every host directly, the
// machine's ip_forward is left as it was, and the cleanup removes the
// second bridge and the router.
func TestHostsOnTwoSubnetsRouteButShareNoLink(t *testing.T) {
	testbed.Require(t, testbed.NeedRoot)
	const ipForward = "/proc/sys/net/ipv4/ip_forward"
	forwardBefore, err := os.ReadFile(ipForward)
	if err != nil {
		t.Fatal(err)
	}
	var slot string
	t.Run("routed", func(t *testing.T) {
		hosts := testbed.StartHosts(t, 3, testbed.HostOptions{SecondSubnet: []int{3}})
		a1, a2, b := hosts[0], hosts[1], hosts[2]
		s := strings.Split(a1.Address, ".")[2]
		slot = "sctb" + s
		want := map[*testbed.Host][2]string{
			a1: {"10.250." + s + ".11", "10.250." + s + ".1"},
			a2: {"10.250." + s + ".12", "10.250." + s + ".1"},
			b:  {"10.251." + s + ".13", "10.251." + s + ".1"},
		}
		for h, w := range want {
			if h.Address != w[0] || h.Gateway != w[1] {
				t.Errorf("%s: address %s gateway %s, want %s and %s", h.Name, h.Address, h.Gateway, w[0], w[1])
			}
		}
		routerA, routerB := "10.250."+s+".254", "10.251."+s+".254"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		run := func(h *testbed.Host, script string) string {
			t.Helper()
			out, err := h.Run(ctx, script)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}

		// The test's namespace reaches every host directly (SSH), and each
		// host's /etc/hosts has the others at their addresses.
		for _, h := range hosts {
			if out, err := sshRun(ctx, h, "hostname; cat /etc/hosts"); err != nil {
				t.Fatalf("ssh %s: %v: %s", h.Address, err, out)
			} else if !strings.Contains(out, b.Address+"\t"+b.Name) || !strings.Contains(out, a1.Address+"\t"+a1.Name) {
				t.Errorf("%s: /etc/hosts lacks the hosts' addresses:\n%s", h.Name, out)
			}
		}

		// Across subnets through the router, both ways: sshd answers, by
		// address and by name.
		banner := func(from *testbed.Host, to string) string {
			return run(from, fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/22 && head -c 7 <&3'", to))
		}
		for _, c := range []struct {
			from *testbed.Host
			to   string
		}{{a1, b.Address}, {a1, b.Name}, {a2, b.Address}, {b, a1.Address}, {b, a2.Name}} {
			if out := banner(c.from, c.to); out != "SSH-2.0" {
				t.Errorf("%s -> %s:22: %q, want an SSH banner", c.from.Name, c.to, out)
			}
		}
		for _, c := range []struct {
			from    *testbed.Host
			to, via string
		}{{a1, b.Address, routerA}, {b, a1.Address, routerB}} {
			if out := run(c.from, "ip route get "+c.to); !strings.Contains(out, "via "+c.via+" ") {
				t.Errorf("%s: ip route get %s: %q, want via the router %s", c.from.Name, c.to, out, c.via)
			}
		}
		// Same subnet: directly.
		if out := run(a1, "ip route get "+a2.Address); strings.Contains(out, " via ") {
			t.Errorf("%s: ip route get %s: %q, want on-link", a1.Name, a2.Address, out)
		}

		// No shared link: a route via the other subnet's host is refused
		// (flannel host-gw's route to another node's pod CIDR).
		out, err := a1.Exec(ctx, "ip", "route", "add", "10.99.0.0/24", "via", b.Address)
		if err == nil {
			t.Errorf("%s: ip route add 10.99.0.0/24 via %s succeeded, want refused", a1.Name, b.Address)
		} else if !strings.Contains(out, "Nexthop has invalid gateway") && !strings.Contains(out, "Network is unreachable") {
			t.Errorf("%s: ip route add via %s: %q, want an invalid gateway", a1.Name, b.Address, out)
		} else {
			t.Logf("%s: ip route add 10.99.0.0/24 via %s refused: %s", a1.Name, b.Address, strings.TrimSpace(out))
		}
		// The same route via a host of its own subnet is accepted.
		run(a1, "ip route add 10.99.0.0/24 via "+a2.Address)

		// Every host reaches the test's namespace at the first host's
		// Gateway (what e2e tests give as the server's address).
		l, err := net.Listen("tcp", a1.Gateway+":0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("hello\n"))
				c.Close()
			}
		}()
		port := l.Addr().(*net.TCPAddr).Port
		for _, h := range hosts {
			script := fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d && head -n1 <&3'", a1.Gateway, port)
			if out := run(h, script); strings.TrimSpace(out) != "hello" {
				t.Errorf("%s -> %s:%d: %q", h.Name, a1.Gateway, port, out)
			}
		}
	})
	if slot == "" {
		t.Fatal("the hosts did not start")
	}

	if after, err := os.ReadFile(ipForward); err != nil || string(after) != string(forwardBefore) {
		t.Errorf("%s = %q, want %q as before (%v)", ipForward, after, forwardBefore, err)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifaces {
		if ifc.Name == slot || ifc.Name == slot+"b" || strings.HasPrefix(ifc.Name, slot+"h") {
			t.Errorf("link %s still exists after cleanup", ifc.Name)
		}
	}
	router := slot + "hr"
	for _, pattern := range []string{filepath.Join("/sys/fs/cgroup", router), filepath.Join("/sys/fs/cgroup", "*", router)} {
		if matches, _ := filepath.Glob(pattern); len(matches) > 0 {
			t.Errorf("router cgroups %v still exist after cleanup", matches)
		}
	}
	if _, err := os.Stat("/tmp/" + slot); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/tmp/%s still exists after cleanup (%v)", slot, err)
	}
}
