package zke

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestParseResolvConf(t *testing.T) {
	tests := []struct {
		name, text string
		usable     []string
		all        int
	}{
		{"empty", "", nil, 0},
		{"systemd-resolved stub", "# This is /run/systemd/resolve/stub-resolv.conf\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch lan\n", nil, 1},
		{"real upstreams", "nameserver 192.168.1.1\nnameserver 9.9.9.9\n", []string{"192.168.1.1", "9.9.9.9"}, 2},
		{"stub and upstream mixed", "nameserver 127.0.0.53\nnameserver 10.0.0.2\n", []string{"10.0.0.2"}, 2},
		{"comments and options", "; old\n#nameserver 8.8.8.8\nnameserver 1.1.1.1 # cloudflare\noptions ndots:5\ndomain example.com\n", []string{"1.1.1.1"}, 1},
		{"IPv6", "nameserver 2001:db8::53\nnameserver ::1\nnameserver fe80::1%eth0\n", []string{"2001:db8::53"}, 3},
		{"IPv4-mapped loopback", "nameserver ::ffff:127.0.0.1\n", nil, 1},
		{"other loopback addresses", "nameserver 127.0.1.1\nnameserver 127.255.0.9\n", nil, 2},
		{"unspecified", "nameserver 0.0.0.0\n", nil, 1},
		{"not an address", "nameserver dns.example.com\nnameserver\nnameservers 1.2.3.4\n", nil, 0},
		{"tabs and CRLF", "nameserver\t10.1.1.1\r\n  nameserver 10.1.1.2  \n", []string{"10.1.1.1", "10.1.1.2"}, 2},
		{"search line only", "search svc.cluster.local cluster.local\n", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parseResolvConf(tt.text)
			if got := f.usable(); !slices.Equal(got, tt.usable) {
				t.Errorf("usable %v, want %v", got, tt.usable)
			}
			if len(f.nameservers) != tt.all {
				t.Errorf("%d nameservers %v, want %d", len(f.nameservers), f.nameservers, tt.all)
			}
		})
	}
}

func TestParseResolvOutput(t *testing.T) {
	out := resolvMarker + etcResolvConf + " present\nnameserver 127.0.0.53\nsearch lan\n\n" +
		resolvMarker + systemdResolvConf + " present\n# managed\nnameserver 192.168.7.1\n"
	files := parseResolvOutput(out)
	if f := files[etcResolvConf]; !f.found || len(f.nameservers) != 1 || f.nameservers[0].String() != "127.0.0.53" {
		t.Errorf("/etc/resolv.conf: %+v", f)
	}
	if f := files[systemdResolvConf]; !f.found || !slices.Equal(f.usable(), []string{"192.168.7.1"}) {
		t.Errorf("systemd's: %+v", f)
	}
	missing := parseResolvOutput(resolvMarker + etcResolvConf + " present\nnameserver 10.0.0.1\n" + resolvMarker + systemdResolvConf + " missing\n")
	if missing[systemdResolvConf].found {
		t.Error("a missing file was read as present")
	}
	if got := missing[etcResolvConf].usable(); !slices.Equal(got, []string{"10.0.0.1"}) {
		t.Errorf("a file before a missing one: %v", got)
	}
	// The script names each file once, quoted, bounded by head -c.
	s := resolvScript()
	for _, want := range []string{"'" + etcResolvConf + "'", "'" + systemdResolvConf + "'", "head -c 65536"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
}

func TestDecideDNS(t *testing.T) {
	file := func(text string) resolvFile { f := parseResolvConf(text); f.found = true; return f }
	stub, real := file("nameserver 127.0.0.53\nsearch lan\n"), file("nameserver 192.168.1.1\nnameserver 127.0.0.1\n")
	tests := []struct {
		name        string
		files       map[string]resolvFile
		resolvConf  string
		upstreams   []string
		problemHas  []string
		problemNone bool
	}{
		{"plain host", map[string]resolvFile{etcResolvConf: real}, etcResolvConf, []string{"192.168.1.1"}, nil, true},
		{"plain host beside resolved", map[string]resolvFile{etcResolvConf: real, systemdResolvConf: file("nameserver 10.9.9.9\n")},
			etcResolvConf, []string{"192.168.1.1"}, nil, true},
		{"systemd-resolved", map[string]resolvFile{etcResolvConf: stub, systemdResolvConf: file("nameserver 10.0.0.2\nnameserver 2001:db8::2\n")},
			systemdResolvConf, []string{"10.0.0.2", "2001:db8::2"}, nil, true},
		{"stub, no resolved file", map[string]resolvFile{etcResolvConf: stub}, etcResolvConf, nil,
			[]string{"w1's /etc/resolv.conf names only 127.0.0.53 and /run/systemd/resolve/resolv.conf is missing:", "clusterUpstreamDNS"}, false},
		{"resolved without upstreams", map[string]resolvFile{etcResolvConf: stub, systemdResolvConf: file("# no servers\n")}, systemdResolvConf, nil,
			[]string{"/run/systemd/resolve/resolv.conf names no nameserver", "DNS="}, false},
		{"no nameserver at all", map[string]resolvFile{etcResolvConf: file("search lan\n")}, etcResolvConf, nil,
			[]string{"w1's /etc/resolv.conf names no nameserver (the resolver then asks 127.0.0.1)"}, false},
		{"no resolv.conf", map[string]resolvFile{}, etcResolvConf, nil, []string{"w1 has no /etc/resolv.conf"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decideDNS("w1", tt.files)
			if d.resolvConf != tt.resolvConf || !slices.Equal(d.upstreams, tt.upstreams) {
				t.Errorf("got %s %v, want %s %v", d.resolvConf, d.upstreams, tt.resolvConf, tt.upstreams)
			}
			if (d.problem == "") != tt.problemNone {
				t.Errorf("problem %q", d.problem)
			}
			for _, want := range tt.problemHas {
				if !strings.Contains(d.problem, want) {
					t.Errorf("problem %q lacks %q", d.problem, want)
				}
			}
		})
	}
}

// TestRunDNSFacts: what preflight found of the workers reaches the
// kubelet's configuration, its container and the Corefile.
func TestRunDNSFacts(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	n2, n3 := r.nodes[1], r.nodes[2]
	r.facts["n2"] = nodeFacts{canPrivileged: true, dns: nodeDNS{resolvConf: systemdResolvConf, upstreams: []string{"10.0.0.53", "2001:db8::53"}}}
	r.facts["n3"] = nodeFacts{canPrivileged: true, dns: nodeDNS{resolvConf: etcResolvConf, upstreams: []string{"10.0.0.53", "10.0.1.53"}}}
	kc, err := kubeletConfig(n2, r.cfg, "", r.kubeletResolvConf(n2))
	if err != nil {
		t.Fatal(err)
	}
	var got kubeletConfiguration
	if err := yaml.Unmarshal(kc, &got); err != nil || got.ResolvConf != systemdResolvConf {
		t.Errorf("n2's kubelet reads %q (%v)", got.ResolvConf, err)
	}
	if s := r.kubeletSpec(n2, nodeSocket{Configured: n2.ContainerdSocket}); !slices.Contains(s.Binds, "/run/systemd/resolve:/run/systemd/resolve:ro") {
		t.Errorf("n2's kubelet binds %v", s.Binds)
	}
	if s := r.kubeletSpec(n3, nodeSocket{Configured: n3.ContainerdSocket}); slices.ContainsFunc(s.Binds, func(b string) bool { return strings.HasPrefix(b, systemdResolvDir) }) {
		t.Errorf("n3's kubelet binds %v", s.Binds)
	}
	if cf := r.corefile(); !strings.Contains(cf, "forward . 10.0.0.53 2001:db8::53 10.0.1.53\n") {
		t.Errorf("corefile:\n%s", cf)
	}
	r.cfg.ClusterUpstreamDNS = []string{"9.9.9.9"}
	if cf := r.corefile(); !strings.Contains(cf, "forward . 9.9.9.9\n") {
		t.Errorf("corefile with clusterUpstreamDNS:\n%s", cf)
	}
}

func TestDNSUpstreamsCapped(t *testing.T) {
	cfg := testConfig()
	for i := range 20 {
		cfg.Nodes = append(cfg.Nodes, model.Node{Name: fmt.Sprintf("w%d", i), Address: fmt.Sprintf("10.0.1.%d", i+1), Roles: []model.Role{model.RoleWorker}})
	}
	r := testRun(t, cfg, nil)
	for i, n := range withRole(r.nodes, model.RoleWorker) {
		// Every worker shares one server and has one of its own.
		r.facts[n.Name] = nodeFacts{dns: nodeDNS{resolvConf: etcResolvConf, upstreams: []string{"10.2.0.1", fmt.Sprintf("10.3.0.%d", i)}}}
	}
	ups := r.dnsUpstreams()
	want := []string{"10.2.0.1"}
	for i := range maxForwardUpstreams - 1 {
		want = append(want, fmt.Sprintf("10.3.0.%d", i))
	}
	if !slices.Equal(ups, want) {
		t.Errorf("upstreams %v, want %v", ups, want)
	}
}
