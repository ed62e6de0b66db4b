package testbed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// iptablesProbe is a tiny ruleset in the shape kube-proxy writes: a nat
// chain with a DNAT and a filter chain using the conntrack, comment and
// statistic modules.
const iptablesProbe = `*nat
:SINGLECLOUD-PROBE - [0:0]
-A SINGLECLOUD-PROBE -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https" -m tcp --dport 443 -j DNAT --to-destination 10.250.0.10:6443
COMMIT
*filter
:SINGLECLOUD-PROBE - [0:0]
-A SINGLECLOUD-PROBE -m conntrack --ctstate INVALID -j DROP
-A SINGLECLOUD-PROBE -m statistic --mode random --probability 0.5 -j ACCEPT
COMMIT
`

// TestKubeProxyImageRunsIptables runs the kube-proxy image's iptables in a
// host's network namespace, as kube-proxy does, and checks that the rules
// land where the host's own iptables sees them.
func TestKubeProxyImageRunsIptables(t *testing.T) {
	h := testbed.StartHosts(t, 1, testbed.HostOptions{Docker: true, Images: []string{testbed.KubeProxyImage}})[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := "docker run --rm -i --network host --cap-add NET_ADMIN --cap-add NET_RAW --entrypoint "
	docker := func(cmd string, args ...string) (string, error) {
		full := append([]string{"run", "--rm", "-i", "--network", "host", "--cap-add", "NET_ADMIN", "--cap-add", "NET_RAW",
			"--entrypoint", cmd, testbed.KubeProxyImage}, args...)
		return h.Exec(ctx, "docker", full...)
	}

	out, err := docker("iptables", "--version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "iptables v1.8") || !strings.Contains(out, "nf_tables") {
		t.Errorf("iptables --version printed %q, want iptables v1.8.x (nf_tables)", out)
	}
	if out, err := docker("iptables", "-w", "5", "-t", "nat", "-L", "-n"); err != nil || !strings.Contains(out, "Chain PREROUTING") {
		t.Errorf("iptables -t nat -L -n: %q, %v; want the nat table's chains", out, err)
	}
	if out, err := docker("ip6tables", "-w", "-t", "nat", "-L", "-n"); err != nil || !strings.Contains(out, "Chain POSTROUTING") {
		t.Errorf("ip6tables -t nat -L -n: %q, %v; want the nat table's chains", out, err)
	}
	// The legacy variant is there too, with its lock under /run.
	if out, err := docker("iptables-legacy", "-w", "5", "-t", "filter", "-L", "-n"); err != nil || !strings.Contains(out, "Chain FORWARD") {
		t.Errorf("iptables-legacy -w 5 -L -n: %q, %v; want the filter table's chains", out, err)
	}

	// The image has no shell: the ruleset goes in on the container's
	// stdin.
	if _, err := h.Run(ctx, "printf '%s' '"+iptablesProbe+"' | "+run+"iptables-restore "+testbed.KubeProxyImage+" -w 5 --noflush"); err != nil {
		t.Fatalf("iptables-restore --noflush of a small ruleset: %v", err)
	}
	out, err = docker("iptables-save")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--to-destination 10.250.0.10:6443", "--ctstate INVALID -j DROP", "--mode random --probability 0.5"} {
		if !strings.Contains(out, want) {
			t.Errorf("iptables-save in the container lacks %q:\n%s", want, out)
		}
	}
	// The rules are in the host's network namespace, in the backend the
	// host's own iptables uses.
	out, err = h.Exec(ctx, "iptables", "-w", "5", "-t", "nat", "-S", "SINGLECLOUD-PROBE")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "--to-destination 10.250.0.10:6443") {
		t.Errorf("host's iptables -t nat -S SINGLECLOUD-PROBE = %q, want the DNAT rule the container wrote", out)
	}
}
