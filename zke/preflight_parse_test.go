package zke

import (
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

const sampleProbe = `@@os
Linux
x86_64
@@mem
MemTotal:       24604248 kB
@@disk
/dev/vda       263174212 12000000 83000000  13% /
@@swap
0
@@time
1795000000
@@caps
CapBnd:	000001fffeffffff
@@tcp
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0951 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1A0A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0
@@kernel
ip_forward 1
bridge-nf-call-iptables missing
overlay yes
@@end
`

func TestParsePreflight(t *testing.T) {
	f, err := parsePreflight(sampleProbe)
	if err != nil {
		t.Fatal(err)
	}
	want := probeFacts{
		OS: "Linux", Arch: "x86_64", MemTotalKiB: 24604248, DiskFreeKiB: 83000000, SwapDevices: 0,
		EpochSeconds: 1795000000, CapBnd: 0x000001fffeffffff,
		Listening: map[int]bool{22: true, 6666: true},
		Kernel:    map[string]string{"ip_forward": "1", "bridge-nf-call-iptables": "missing", "overlay": "yes"},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("parsed %+v\nwant   %+v", f, want)
	}
	if _, err := parsePreflight(strings.Replace(sampleProbe, "@@end\n", "", 1)); err == nil {
		t.Error("incomplete output accepted")
	}
	if _, err := parsePreflight(strings.Replace(sampleProbe, "24604248", "lots", 1)); err == nil || !strings.Contains(err.Error(), "mem") {
		t.Errorf("bad number: %v", err)
	}
}

func TestMissingCaps(t *testing.T) {
	cases := []struct {
		bnd  uint64
		want []string
	}{
		{0x000001ffffffffff, nil},
		{0x000001fffeffffff, []string{"SYS_RESOURCE"}},
		{0x000001fffefffffe, []string{"CHOWN", "SYS_RESOURCE"}},
		{0, nil},
	}
	for _, tc := range cases {
		if got := missingCaps(tc.bnd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("missingCaps(%x) = %v, want %v", tc.bnd, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got := shellQuote(`/a b/'c'`); got != `'/a b/'\''c'\'''` {
		t.Errorf("shellQuote: %s", got)
	}
}

// TestKernelProblems: each missing setting a worker's pods need is named
// with its fix; a setting the probe did not report is not judged.
func TestKernelProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kernel map[string]string
		want   []string
	}{
		{"all there", map[string]string{"ip_forward": "1", "bridge-nf-call-iptables": "1", "overlay": "yes"}, nil},
		{"overlay as a module", map[string]string{"ip_forward": "1", "bridge-nf-call-iptables": "1", "overlay": "module"}, nil},
		{"not reported", nil, nil},
		{"forwarding off", map[string]string{"ip_forward": "0"}, []string{"sysctl -w net.ipv4.ip_forward=1"}},
		{"no br_netfilter", map[string]string{"bridge-nf-call-iptables": "missing"}, []string{"modprobe br_netfilter"}},
		{"bridge netfilter off", map[string]string{"bridge-nf-call-iptables": "0"}, []string{"net.bridge.bridge-nf-call-iptables=1"}},
		{"no overlay", map[string]string{"overlay": "no"}, []string{"overlay module"}},
		{"vxlan as a module", map[string]string{"vxlan": "module"}, nil},
		{"no vxlan", map[string]string{"vxlan": "no"}, []string{"linux-modules-extra"}},
		{"no vxlan, bridge plugin", map[string]string{"vxlan": "no"}, nil},
	} {
		got := kernelProblems(tc.kernel, !strings.HasSuffix(tc.name, "bridge plugin"))
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %d problems", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: %q does not say %q", tc.name, got[i], w)
			}
		}
	}
}

// TestPreflightScriptRunsHere runs the preflight script with this
// machine's sh and reads it back: every section parses, and each kernel
// setting is reported.
func TestPreflightScriptRunsHere(t *testing.T) {
	out, err := exec.Command("sh", "-c", preflightScript("/")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f, err := parsePreflight(string(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{kernelIPForward, kernelBridgeNF, kernelOverlay, kernelVXLAN, kernelFlannelDevice} {
		if f.Kernel[k] == "" {
			t.Errorf("the script did not report %s: %v", k, f.Kernel)
		}
	}
}

// TestForeignFlannel: a flannel device or lease on a worker whose pod
// network runs flanneld, where zke has run no kubelet, is another
// flannel's, and stops preflight with the way out; on a node zke already
// runs, or without flanneld, or on a node without the worker role, it is
// not judged.
func TestForeignFlannel(t *testing.T) {
	worker := nodesOf(model.ClusterConfig{Nodes: []model.Node{{Name: "w1", Address: "10.0.0.1", Roles: []model.Role{model.RoleWorker}}}})[0]
	etcd := nodesOf(model.ClusterConfig{Nodes: []model.Node{{Name: "e1", Address: "10.0.0.2", Roles: []model.Role{model.RoleEtcd}}}})[0]
	facts := func(flannel bool, device string) probeFacts {
		return probeFacts{FlannelNeeded: flannel, Kernel: map[string]string{kernelFlannelDevice: device}}
	}
	ours := []string{worker.dir(dirKubelet)}
	for _, tc := range []struct {
		name  string
		n     node
		f     probeFacts
		owned []string
		want  bool
	}{
		{"foreign device", worker, facts(true, "yes"), nil, true},
		{"our own device", worker, facts(true, "yes"), ours, false},
		{"no device", worker, facts(true, "no"), nil, false},
		{"a pod network without flanneld", worker, facts(false, "yes"), nil, false},
		{"not a worker", etcd, facts(true, "yes"), nil, false},
	} {
		got := foreignFlannel(tc.n, tc.f, tc.owned)
		if (got != "") != tc.want || (got != "" && !strings.Contains(got, "ip link delete flannel.1")) {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

// TestEndpointPortInUse: with a shared endpoint, something else on a
// control-plane node's port 8443 stops preflight (haproxy could not bind
// it); this cluster's own running haproxy does not, and neither does the
// port on a worker or without an endpoint.
func TestEndpointPortInUse(t *testing.T) {
	cp := node{Node: model.Node{Name: "cp", Roles: []model.Role{model.RoleControlPlane}}}
	worker := node{Node: model.Node{Name: "w", Roles: []model.Role{model.RoleWorker}}}
	busy := probeFacts{OS: "Linux", Arch: "x86_64", MemTotalKiB: 4 << 20, DiskFreeKiB: 20 << 20, EpochSeconds: 100,
		Listening: map[int]bool{model.APIEndpointPort: true}, SharedEndpoint: true}
	inUse := func(n node, f probeFacts, owned map[int]bool) bool {
		problems, _ := checkNode(n, f, owned, 100)
		return slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "port 8443 is in use") })
	}
	if !inUse(cp, busy, nil) {
		t.Error("a control-plane node with port 8443 taken passed")
	}
	if inUse(cp, busy, map[int]bool{model.APIEndpointPort: true}) {
		t.Error("this cluster's own haproxy counted as in use")
	}
	if inUse(worker, busy, nil) {
		t.Error("a worker's port 8443 judged")
	}
	noEndpoint := busy
	noEndpoint.SharedEndpoint = false
	if inUse(cp, noEndpoint, nil) {
		t.Error("port 8443 judged without a shared endpoint")
	}
	if !slices.Contains(componentPorts[containerHAProxy], model.APIEndpointPort) {
		t.Error("haproxy's port is not one of its container's")
	}
}
