package testbed_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestRebootKeepsDisksAndLosesTheRest reboots a Docker host with a bridge
// and veths, an address, a route, a rule, an iptables chain and policy,
// files in /run and /etc, mounts, changed sysctls and a container with a
// restart policy: afterwards only the files on disk and the container
// (started again by dockerd, as on a machine) are left, and sshd answers
// with the same host key.
func TestRebootKeepsDisksAndLosesTheRest(t *testing.T) {
	h := testbed.StartHosts(t, 1, testbed.HostOptions{Docker: true, Images: []string{testbed.BusyboxImage}})[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(script string) string {
		t.Helper()
		out, err := h.Run(ctx, script)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	// Sysctls of the host's network namespace, set to other values.
	forward := run("cat /proc/sys/net/ipv4/ip_forward")
	rpFilter := run("cat /proc/sys/net/ipv4/conf/all/rp_filter")
	// The kernel may lack the dummy module: a bridge and a veth pair.
	run("ip link add br9 type bridge && ip link set br9 up && ip addr add 10.99.0.1/24 dev br9 && " +
		"ip link add ve9 type veth peer name ve9p && ip link set ve9 master br9 && " +
		"ip route add 10.98.0.0/24 via " + h.Gateway + " && ip rule add priority 100 to 10.97.0.0/24 lookup 100 && " +
		"iptables -t nat -N TESTCHAIN && iptables -t nat -A POSTROUTING -j TESTCHAIN && iptables -P FORWARD DROP && " +
		"echo 1 > /run/volatile && echo 1 > /etc/persistent && " +
		"mkdir -p /var/lib/kubelet/x && mount -t tmpfs tmpfs /var/lib/kubelet/x && touch /var/lib/kubelet/x/in-tmpfs && " +
		"mkdir -p /run/netns && touch /run/netns/ns1 && mount --bind /proc/self/ns/net /run/netns/ns1 && " +
		"echo " + other(rpFilter) + " > /proc/sys/net/ipv4/conf/all/rp_filter && echo " + other(forward) + " > /proc/sys/net/ipv4/ip_forward")
	run("docker run -d --name sleeper --network host --restart unless-stopped " + testbed.BusyboxImage + " sleep 1d")
	inspect := func() string {
		t.Helper()
		return run("docker inspect -f '{{.State.Running}} {{.State.Pid}} {{.State.StartedAt}}' sleeper")
	}
	before := inspect()
	key := h.HostPublicKey

	start := time.Now()
	if err := h.Reboot(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("reboot took %s", time.Since(start).Round(time.Millisecond))

	c, err := h.DialSSH(ctx)
	if err != nil {
		t.Fatalf("sshd after the reboot: %v", err)
	}
	c.Close()
	if string(h.HostPublicKey.Marshal()) != string(key.Marshal()) {
		t.Error("the host key changed")
	}
	for _, c := range []struct{ what, script, want string }{
		{"links", "ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | sort | tr '\\n' ' '", "eth0 lo"},
		{"route to 10.98.0.0/24", "ip route show 10.98.0.0/24", ""},
		{"rule 100", "ip rule show priority 100", ""},
		{"default route", "ip route show default", "default via " + h.Gateway + " dev eth0"},
		{"eth0's address", "ip -4 -o addr show dev eth0 | awk '{print $4}'", h.Address + "/24"},
		{"nat chains", "iptables -t nat -S | grep -c TESTCHAIN || true", "0"},
		{"FORWARD policy", "iptables -S FORWARD", "-P FORWARD ACCEPT"},
		{"file in /run", "test -e /run/volatile && echo present || echo gone", "gone"},
		{"file in /etc", "cat /etc/persistent", "1"},
		{"tmpfs", "grep -c ' /var/lib/kubelet/x ' /proc/self/mountinfo || true", "0"},
		{"netns mount", "grep -c ' /run/netns/ns1 ' /proc/self/mountinfo || true", "0"},
		{"rp_filter", "cat /proc/sys/net/ipv4/conf/all/rp_filter", rpFilter},
		{"ip_forward", "cat /proc/sys/net/ipv4/ip_forward", forward},
		{"sshd's directory", "test -d /run/sshd && echo yes", "yes"},
	} {
		if got := run(c.script); got != c.want {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
	if _, err := h.Exec(ctx, "test", "-e", "/var/lib/kubelet/x/in-tmpfs"); err == nil {
		t.Error("the tmpfs's file is still there")
	}

	var after string
	waitFor(t, ctx, "the container started again", func() error {
		after = inspect()
		if !strings.HasPrefix(after, "true ") {
			return fmt.Errorf("sleeper: %s", after)
		}
		return nil
	})
	t.Logf("container before: %s; after: %s (%s after the reboot began)", before, after, time.Since(start).Round(time.Millisecond))
	if b, a := strings.Fields(before), strings.Fields(after); b[1] == a[1] || b[2] == a[2] {
		t.Errorf("the container was not started again: before %v, after %v", b, a)
	}
}

// other is another value of a 0/1/2 setting.
func other(v string) string {
	if v == "1" {
		return "2"
	}
	return "1"
}
