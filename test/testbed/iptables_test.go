package testbed_test

import (
	"context"
	"fmt"
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

// TestFlannelImageRunsFlanneldAndIptables runs the flannel image as the
// kubelet runs its DaemonSet's pods, from containerd's k8s.io namespace in
// the host's network namespace with NET_ADMIN and NET_RAW: flanneld is
// where upstream's image has it and reports flannel's version, and the
// image's iptables writes rules that the host's own iptables sees.
func TestFlannelImageRunsFlanneldAndIptables(t *testing.T) {
	h := testbed.StartHosts(t, 1, testbed.HostOptions{Containerd: true, Images: []string{testbed.FlannelImage}})[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := 0
	ctr := func(args ...string) (string, error) {
		n++
		full := append([]string{"--address", h.ContainerdSocket, "--namespace", "k8s.io", "run", "--rm", "--net-host",
			"--cap-add", "CAP_NET_ADMIN", "--cap-add", "CAP_NET_RAW", testbed.FlannelImage, fmt.Sprintf("flannel-probe-%d", n)}, args...)
		return h.Exec(ctx, "ctr", full...)
	}

	out, err := ctr("/opt/bin/flanneld", "--version")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "v0.28.10" {
		t.Errorf("flanneld --version printed %q, want v0.28.10", out)
	}
	if out, err := ctr("iptables", "-w", "5", "-t", "nat", "-S"); err != nil || !strings.Contains(out, "-P POSTROUTING ACCEPT") {
		t.Errorf("iptables -t nat -S: %q, %v; want the nat table's policies", out, err)
	}
	if out, err := ctr("ip6tables", "-w", "5", "-t", "nat", "-S"); err != nil || !strings.Contains(out, "-P POSTROUTING ACCEPT") {
		t.Errorf("ip6tables -t nat -S: %q, %v; want the nat table's policies", out, err)
	}
	// The shell upstream's image has, the directory flanneld reads
	// net-conf.json from, and install-conf, which kube-flannel.yml's init
	// container runs to install the CNI configuration. (/run/flannel is
	// in the image too, but ctr mounts a tmpfs on /run; the kubelet does
	// not.)
	if out, err := ctr("sh", "-c", "test -d /etc/kube-flannel && mkdir /tmp/net.d && /opt/bin/install-conf /etc/group /tmp/net.d/10-flannel.conflist && cat /tmp/net.d/10-flannel.conflist"); err != nil || !strings.Contains(out, "root:x:0:") {
		t.Errorf("sh, /etc/kube-flannel and install-conf in the image: %q, %v; want /etc/group installed", out, err)
	}

	// A rule in the shape of flanneld's masquerading, written and read
	// back by the image's iptables, is in the host's network namespace.
	rule := []string{"-s", "10.244.0.0/16", "-d", "10.244.0.0/16", "-m", "comment", "--comment", "flanneld masq", "-j", "RETURN"}
	if out, err := ctr("iptables", "-w", "5", "-t", "nat", "-N", "FLANNEL-PROBE"); err != nil {
		t.Fatalf("iptables -t nat -N FLANNEL-PROBE: %v: %s", err, out)
	}
	if out, err := ctr(append([]string{"iptables", "-w", "5", "-t", "nat", "-A", "FLANNEL-PROBE"}, rule...)...); err != nil {
		t.Fatalf("iptables -t nat -A FLANNEL-PROBE: %v: %s", err, out)
	}
	out, err = ctr("iptables-save", "-t", "nat")
	if err != nil || !strings.Contains(out, `-A FLANNEL-PROBE -s 10.244.0.0/16 -d 10.244.0.0/16 -m comment --comment "flanneld masq" -j RETURN`) {
		t.Errorf("iptables-save -t nat in the container: %v; want the probe rule:\n%s", err, out)
	}
	out, err = h.Exec(ctx, "iptables", "-w", "5", "-t", "nat", "-S", "FLANNEL-PROBE")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `--comment "flanneld masq" -j RETURN`) {
		t.Errorf("host's iptables -t nat -S FLANNEL-PROBE = %q, want the rule the container wrote", out)
	}
}
