package validation

import (
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// runCreateCases applies each case to a valid cluster and checks what
// ValidateCreate reports.
func runCreateCases(t *testing.T, tests []createCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			tt.mutate(t, &c)
			checkViolations(t, ValidateCreate(c), tt.want, tt.reason)
		})
	}
}

// onNode returns a mutation that applies f to node i.
func onNode(i int, f func(n *model.Node)) func(*testing.T, *model.ClusterConfig) {
	return func(_ *testing.T, c *model.ClusterConfig) { f(&c.Nodes[i]) }
}

func TestValidateCreateNodeAddresses(t *testing.T) {
	runCreateCases(t, []createCase{
		{"internalAddress defaulted to address ok", onNode(0, func(*model.Node) {}), nil, ""},
		{"internalAddress another IP ok", onNode(0, func(n *model.Node) { n.InternalAddress = "192.168.0.1" }), nil, ""},
		{"internalAddress IPv6 ok", onNode(0, func(n *model.Node) { n.InternalAddress = "fd00::1" }), nil, ""},
		{"internalAddress empty", onNode(0, func(n *model.Node) { n.InternalAddress = "" }), []string{"nodes[0].internalAddress"}, "is required"},
		{"internalAddress a host name", onNode(0, func(n *model.Node) { n.InternalAddress = "n1.local" }), []string{"nodes[0].internalAddress"}, `"n1.local" is not an IP address`},
		{"internalAddress with zone", onNode(0, func(n *model.Node) { n.InternalAddress = "fe80::1%eth0" }), []string{"nodes[0].internalAddress"}, "not an IP address"},
		{"internalAddress 0.0.0.0", onNode(0, func(n *model.Node) { n.InternalAddress = "0.0.0.0" }), []string{"nodes[0].internalAddress"}, "never bind to every interface"},
		{"internalAddress ::", onNode(0, func(n *model.Node) { n.InternalAddress = "::" }), []string{"nodes[0].internalAddress"}, "unspecified"},
		{"internalAddress duplicates another's", onNode(1, func(n *model.Node) { n.InternalAddress = "192.168.0.1" }), nil, ""},
		{"internalAddress duplicate", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes[0].InternalAddress, c.Nodes[1].InternalAddress = "192.168.0.1", "192.168.0.1"
		}, []string{"nodes[1].internalAddress"}, "192.168.0.1 is already the internal address of nodes[0]"},
		{"internalAddress duplicate in another spelling", onNode(1, func(n *model.Node) { n.InternalAddress = "::ffff:10.0.0.1" }),
			[]string{"nodes[1].internalAddress"}, "10.0.0.1 is already the internal address of nodes[0]"},
		{"internalAddress clashes with one defaulted from an address", onNode(0, func(n *model.Node) { n.InternalAddress = "10.0.0.3" }),
			[]string{"nodes[2].internalAddress"}, "10.0.0.3 is already the internal address of nodes[0]"},
		{"duplicate address reported once", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes[2] = withDefaults(model.Node{Name: "n3", Address: "10.0.0.2", Roles: roles(worker)})
		}, []string{"nodes[2].address"}, "already the address of nodes[1]"},
		{"bad address reported once", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes[2] = withDefaults(model.Node{Name: "n3", Address: "n3.local", Roles: roles(worker)})
		}, []string{"nodes[2].address"}, "not an IP address"},
		{"node address is another node's internal address ok", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes[0].InternalAddress = "192.168.0.1"
			c.Nodes[2] = withDefaults(model.Node{Name: "n3", Address: "10.0.0.3", InternalAddress: "192.168.0.3", Roles: roles(worker)})
		}, nil, ""},
	})
}

func TestValidateCreateNodeSSH(t *testing.T) {
	runCreateCases(t, []createCase{
		{"node sshPort 0", onNode(1, func(n *model.Node) { n.SSHPort = 0 }), []string{"nodes[1].sshPort"}, "0 is out of range"},
		{"node sshPort negative", onNode(1, func(n *model.Node) { n.SSHPort = -1 }), []string{"nodes[1].sshPort"}, "out of range"},
		{"node sshPort 65536", onNode(1, func(n *model.Node) { n.SSHPort = 65536 }), []string{"nodes[1].sshPort"}, "between 1 and 65535"},
		{"node sshPort 1 ok", onNode(1, func(n *model.Node) { n.SSHPort = 1 }), nil, ""},
		{"node sshPort 65535 ok", onNode(1, func(n *model.Node) { n.SSHPort = 65535 }), nil, ""},
		{"bad cluster sshPort inherited by the nodes reported once", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHPort = 70000
			for i := range c.Nodes {
				c.Nodes[i].SSHPort = 70000
			}
		}, []string{"sshPort"}, "70000 is out of range"},
		{"node sshPort bad beside a bad cluster sshPort", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHPort, c.Nodes[1].SSHPort = 70000, 0
		}, []string{"sshPort", "nodes[1].sshPort"}, "70000"},
		{"node sshUser empty", onNode(1, func(n *model.Node) { n.SSHUser = "" }), []string{"nodes[1].sshUser"}, "is required"},
		{"node sshUser other ok", onNode(1, func(n *model.Node) { n.SSHUser = "core" }), nil, ""},
		{"empty cluster sshUser inherited by the nodes reported once", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHUser = ""
			for i := range c.Nodes {
				c.Nodes[i].SSHUser = ""
			}
		}, []string{"sshUser"}, "is required"},
		{"node sshUser set without a cluster sshUser", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHUser = ""
			for i := range c.Nodes {
				c.Nodes[i].SSHUser = "core"
			}
		}, []string{"sshUser"}, "is required"},
	})
}

func TestValidateCreateNodePaths(t *testing.T) {
	fields := []struct {
		field string
		set   func(n *model.Node, p string)
	}{
		{"dockerSocket", func(n *model.Node, p string) { n.DockerSocket = p }},
		{"containerdSocket", func(n *model.Node, p string) { n.ContainerdSocket = p }},
		{"prefixPath", func(n *model.Node, p string) { n.PrefixPath = p }},
	}
	rows := []struct {
		name   string
		value  string
		reason string // "" when the path is valid
	}{
		{"empty", "", "is required: give an absolute path"},
		{"relative", "var/run/x.sock", `"var/run/x.sock" is not an absolute path`},
		{"dot relative", "./x.sock", "not an absolute path"},
		{"double slash", "/var/run//x.sock", `is not a clean path; write it as /var/run/x.sock`},
		{"trailing slash", "/opt/zke/", "write it as /opt/zke"},
		{"dot element", "/opt/./zke", "write it as /opt/zke"},
		{"dot-dot inside", "/opt/../etc", `must not contain ".."`},
		{"dot-dot at the end", "/opt/zke/..", `must not contain ".."`},
		{"dot-dot at the root", "/..", `must not contain ".."`},
		{"colon", "/run/docker:1.sock", "contains ':'"},
		{"space", "/opt/my zke", "white space"},
		{"tab", "/opt/zke\tx", "white space"},
		{"root ok", "/", ""},
		{"deep ok", "/run/k3s/containerd/containerd.sock", ""},
		{"dots in a name ok", "/opt/zke..d/.x", ""},
	}
	var tests []createCase
	for _, f := range fields {
		for _, r := range rows {
			tc := createCase{name: f.field + " " + r.name, mutate: onNode(2, func(n *model.Node) { f.set(n, r.value) })}
			if r.reason != "" {
				tc.want, tc.reason = []string{"nodes[2]." + f.field}, r.reason
			}
			tests = append(tests, tc)
		}
	}
	runCreateCases(t, tests)
}

func TestValidateCreateNodeLabels(t *testing.T) {
	setLabels := func(labels map[string]string) func(*testing.T, *model.ClusterConfig) {
		return onNode(0, func(n *model.Node) { n.Labels = labels })
	}
	long := strings.Repeat("a", 64)
	runCreateCases(t, []createCase{
		{"labels ok", setLabels(map[string]string{
			"zone": "a", "example.com/rack": "r-1", "k8s.io/x_y.Z": "", "A": "B", "node-role.kubernetes.io/gpu": "",
			strings.Repeat("k", 63): strings.Repeat("v", 63), strings.Repeat("p", 63) + ".com/n": "1.2_3-x",
		}), nil, ""},
		{"no labels ok", setLabels(nil), nil, ""},
		{"key empty", setLabels(map[string]string{"": "a"}), []string{`nodes[0].labels[""]`}, "key must not be empty"},
		{"key with a space", setLabels(map[string]string{"bad key": "a"}), []string{`nodes[0].labels["bad key"]`}, `key "bad key" may contain only letters, digits, '-', '_' and '.'`},
		{"key starts with a dash", setLabels(map[string]string{"-zone": "a"}), []string{`nodes[0].labels["-zone"]`}, "must start and end with a letter or digit"},
		{"key ends with a dot", setLabels(map[string]string{"zone.": "a"}), []string{`nodes[0].labels["zone."]`}, "must start and end"},
		{"key name too long", setLabels(map[string]string{long: "a"}), []string{`nodes[0].labels["` + long + `"]`}, "64 characters long; use at most 63"},
		{"key prefix upper case", setLabels(map[string]string{"Example.com/zone": "a"}), []string{`nodes[0].labels["Example.com/zone"]`}, "bad prefix"},
		{"key prefix with underscore", setLabels(map[string]string{"my_corp.com/zone": "a"}), []string{`nodes[0].labels["my_corp.com/zone"]`}, "bad prefix"},
		{"key prefix too long", setLabels(map[string]string{strings.Repeat(strings.Repeat("a", 63)+".", 4) + "com/zone": "a"}),
			[]string{`nodes[0].labels["` + strings.Repeat(strings.Repeat("a", 63)+".", 4) + `com/zone"]`}, "at most 253"},
		{"key prefix empty", setLabels(map[string]string{"/zone": "a"}), []string{`nodes[0].labels["/zone"]`}, "empty prefix"},
		{"key name empty", setLabels(map[string]string{"example.com/": "a"}), []string{`nodes[0].labels["example.com/"]`}, "empty name"},
		{"key with two slashes", setLabels(map[string]string{"a.com/b/c": "a"}), []string{`nodes[0].labels["a.com/b/c"]`}, "more than one '/'"},
		{"value with a space", setLabels(map[string]string{"zone": "a b"}), []string{`nodes[0].labels["zone"]`}, `value "a b" may contain only`},
		{"value with a slash", setLabels(map[string]string{"zone": "a/b"}), []string{`nodes[0].labels["zone"]`}, "value"},
		{"value ends with a dash", setLabels(map[string]string{"zone": "a-"}), []string{`nodes[0].labels["zone"]`}, "must start and end"},
		{"value too long", setLabels(map[string]string{"zone": long}), []string{`nodes[0].labels["zone"]`}, "use at most 63"},
		{"key and value bad", setLabels(map[string]string{"a b": "c d"}), []string{`nodes[0].labels["a b"]`, `nodes[0].labels["a b"]`}, `key "a b"`},
		{"prefixed key with a bad name", setLabels(map[string]string{"example.com/a b": "c"}), []string{`nodes[0].labels["example.com/a b"]`}, `key "example.com/a b": name "a b" may contain only`},
		{"bad keys in sorted order", setLabels(map[string]string{"z z": "", "a a": "", "m m": "", "ok": "x"}),
			[]string{`nodes[0].labels["a a"]`, `nodes[0].labels["m m"]`, `nodes[0].labels["z z"]`}, `"a a"`},
	})
}

func TestValidateCreateNodeTaints(t *testing.T) {
	setTaints := func(taints ...model.Taint) func(*testing.T, *model.ClusterConfig) {
		return onNode(1, func(n *model.Node) { n.Taints = taints })
	}
	runCreateCases(t, []createCase{
		{"taints ok", setTaints(
			model.Taint{Key: "dedicated", Value: "gpu", Effect: model.TaintNoSchedule},
			model.Taint{Key: "dedicated", Value: "gpu", Effect: model.TaintNoExecute},
			model.Taint{Key: "example.com/spot", Effect: model.TaintPreferNoSchedule},
		), nil, ""},
		{"no taints ok", setTaints(), nil, ""},
		{"key empty", setTaints(model.Taint{Effect: model.TaintNoSchedule}), []string{"nodes[1].taints[0].key"}, "key must not be empty"},
		{"key bad", setTaints(model.Taint{Key: "a b", Effect: model.TaintNoSchedule}), []string{"nodes[1].taints[0].key"}, "may contain only"},
		{"value bad", setTaints(model.Taint{Key: "k", Value: "-v", Effect: model.TaintNoSchedule}), []string{"nodes[1].taints[0].value"}, "must start and end"},
		{"effect empty", setTaints(model.Taint{Key: "k"}), []string{"nodes[1].taints[0].effect"}, "is required: use NoSchedule, PreferNoSchedule or NoExecute"},
		{"effect wrong case", setTaints(model.Taint{Key: "k", Effect: "noschedule"}), []string{"nodes[1].taints[0].effect"}, `"noschedule" is not a taint effect`},
		{"effect unknown", setTaints(model.Taint{Key: "k", Effect: "NoEntry"}), []string{"nodes[1].taints[0].effect"}, "not a taint effect"},
		{"duplicate key and effect", setTaints(
			model.Taint{Key: "k", Value: "a", Effect: model.TaintNoSchedule},
			model.Taint{Key: "other", Effect: model.TaintNoSchedule},
			model.Taint{Key: "k", Value: "b", Effect: model.TaintNoSchedule},
		), []string{"nodes[1].taints[2]"}, `repeats taints[0] (key "k", effect NoSchedule)`},
		{"every field bad", setTaints(
			model.Taint{Key: "ok", Effect: model.TaintNoExecute},
			model.Taint{Key: "/k", Value: "v v", Effect: "Never"},
		), []string{"nodes[1].taints[1].key", "nodes[1].taints[1].value", "nodes[1].taints[1].effect"}, "empty prefix"},
	})
}

func TestValidateCreateNodeKubelet(t *testing.T) {
	setKubelet := func(k model.KubeletOverrides) func(*testing.T, *model.ClusterConfig) {
		return onNode(2, func(n *model.Node) { n.Kubelet = k })
	}
	args := func(kv ...string) map[string]string {
		m := make(map[string]string)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	runCreateCases(t, []createCase{
		{"no overrides ok", setKubelet(model.KubeletOverrides{}), nil, ""},
		{"overrides ok", setKubelet(model.KubeletOverrides{
			CgroupRoot: "/zke-n3", ExtraArgs: args("max-pods", "50", "v", "", "feature-gates", "A=true,B=false"),
		}), nil, ""},
		{"cgroupRoot relative", setKubelet(model.KubeletOverrides{CgroupRoot: "kubepods"}), []string{"nodes[2].kubelet.cgroupRoot"}, "not an absolute path"},
		{"cgroupRoot with dot-dot", setKubelet(model.KubeletOverrides{CgroupRoot: "/a/../b"}), []string{"nodes[2].kubelet.cgroupRoot"}, `".."`},
		{"cgroupRoot not clean", setKubelet(model.KubeletOverrides{CgroupRoot: "/zke-n3/"}), []string{"nodes[2].kubelet.cgroupRoot"}, "write it as /zke-n3"},
		{"cgroupRoot shared by nodes ok", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes[1].Kubelet.CgroupRoot, c.Nodes[2].Kubelet.CgroupRoot = "/zke", "/zke"
		}, nil, ""},
		{"flag with leading dashes", setKubelet(model.KubeletOverrides{ExtraArgs: args("--max-pods", "50")}),
			[]string{`nodes[2].kubelet.extraArgs["--max-pods"]`}, `write the flag name without leading dashes: "max-pods", not "--max-pods"`},
		{"flag with one dash", setKubelet(model.KubeletOverrides{ExtraArgs: args("-v", "2")}), []string{`nodes[2].kubelet.extraArgs["-v"]`}, "leading dashes"},
		{"flag empty", setKubelet(model.KubeletOverrides{ExtraArgs: args("", "2")}), []string{`nodes[2].kubelet.extraArgs[""]`}, "flag name is empty"},
		{"flag only dashes", setKubelet(model.KubeletOverrides{ExtraArgs: args("--", "x")}), []string{`nodes[2].kubelet.extraArgs["--"]`}, "flag name is empty"},
		{"flag with value inside", setKubelet(model.KubeletOverrides{ExtraArgs: args("max-pods=50", "")}), []string{`nodes[2].kubelet.extraArgs["max-pods=50"]`}, "contains '='"},
		{"flag with a space", setKubelet(model.KubeletOverrides{ExtraArgs: args("max pods", "50")}), []string{`nodes[2].kubelet.extraArgs["max pods"]`}, "white space"},
		{"bad flags in sorted order", setKubelet(model.KubeletOverrides{ExtraArgs: args("--v", "2", "--a", "1", "ok", "")}),
			[]string{`nodes[2].kubelet.extraArgs["--a"]`, `nodes[2].kubelet.extraArgs["--v"]`}, `"a"`},
		{"cgroupRoot with a newline (YAML injection)", setKubelet(model.KubeletOverrides{CgroupRoot: "/zke\nstaticPodPath: /etc"}),
			[]string{"nodes[2].kubelet.cgroupRoot"}, ""},
		{"cgroupRoot with a newline", setKubelet(model.KubeletOverrides{CgroupRoot: "/zke\nx"}), []string{"nodes[2].kubelet.cgroupRoot"}, "may contain only letters, digits"},
		{"cgroupRoot with a quote", setKubelet(model.KubeletOverrides{CgroupRoot: `/zke"x`}), []string{"nodes[2].kubelet.cgroupRoot"}, "no white space, quotes"},
		{"cgroupRoot with a dollar", setKubelet(model.KubeletOverrides{CgroupRoot: "/zke$(id)"}), []string{"nodes[2].kubelet.cgroupRoot"}, "may contain only"},
		{"cgroupRoot too long", setKubelet(model.KubeletOverrides{CgroupRoot: "/" + strings.Repeat("a", 1024)}), []string{"nodes[2].kubelet.cgroupRoot"}, "1025 characters long"},
		{"flag name with command substitution", setKubelet(model.KubeletOverrides{ExtraArgs: args("$(id)", "1")}),
			[]string{`nodes[2].kubelet.extraArgs["$(id)"]`}, "may contain only lower-case letters, digits and '-'"},
		{"flag name in upper case", setKubelet(model.KubeletOverrides{ExtraArgs: args("Max-Pods", "1")}), []string{`nodes[2].kubelet.extraArgs["Max-Pods"]`}, "lower-case"},
		{"flag name with a dot", setKubelet(model.KubeletOverrides{ExtraArgs: args("a.b", "1")}), []string{`nodes[2].kubelet.extraArgs["a.b"]`}, "lower-case"},
		{"flag name with a newline", setKubelet(model.KubeletOverrides{ExtraArgs: args("v\nx", "1")}), []string{`nodes[2].kubelet.extraArgs["v\nx"]`}, "white space"},
		{"flag name too long", setKubelet(model.KubeletOverrides{ExtraArgs: args(strings.Repeat("a", 101), "1")}), []string{`nodes[2].kubelet.extraArgs["` + strings.Repeat("a", 101) + `"]`}, "101 characters long"},
		{"flag zke sets itself", setKubelet(model.KubeletOverrides{ExtraArgs: args("root-dir", "/tmp")}), []string{`nodes[2].kubelet.extraArgs["root-dir"]`}, "set by zke itself"},
		{"flag value with a newline", setKubelet(model.KubeletOverrides{ExtraArgs: args("v", "2\n--root-dir=/")}), []string{`nodes[2].kubelet.extraArgs["v"]`}, "control character"},
		{"flag value with a NUL", setKubelet(model.KubeletOverrides{ExtraArgs: args("v", "2\x00")}), []string{`nodes[2].kubelet.extraArgs["v"]`}, "control character"},
		{"flag value invalid UTF-8", setKubelet(model.KubeletOverrides{ExtraArgs: args("v", "\xff")}), []string{`nodes[2].kubelet.extraArgs["v"]`}, "invalid UTF-8"},
		{"flag value too long", setKubelet(model.KubeletOverrides{ExtraArgs: args("v", strings.Repeat("2", 4097))}), []string{`nodes[2].kubelet.extraArgs["v"]`}, "4097 characters long"},
		{"flag value with shell characters ok (never through a shell)", setKubelet(model.KubeletOverrides{ExtraArgs: args("node-labels", "a=$b,'c'")}), nil, ""},
	})
}

func TestValidateCreateImages(t *testing.T) {
	setImages := func(images map[string]string) func(*testing.T, *model.ClusterConfig) {
		return func(_ *testing.T, c *model.ClusterConfig) { c.Images = images }
	}
	runCreateCases(t, []createCase{
		{"no images ok", setImages(nil), nil, ""},
		{"every component ok", setImages(map[string]string{
			model.ImageEtcd: "registry.local:5000/zdnscloud/etcd:v3.6.0", model.ImageKubernetes: "zdnscloud/kubernetes:v1.36.3",
			model.ImagePause: "pause@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", model.ImageCoreDNS: "coredns/coredns",
		}), nil, ""},
		{"every per-component key ok", setImages(map[string]string{
			model.ImageKubeAPIServer: "registry.k8s.io/kube-apiserver:v1.36.3", model.ImageKubeControllerManager: "registry.k8s.io/kube-controller-manager:v1.36.3",
			model.ImageKubeScheduler: "registry.k8s.io/kube-scheduler:v1.36.3", model.ImageKubeProxy: "registry.k8s.io/kube-proxy:v1.36.3",
			model.ImageKubelet: "registry.local/kubelet:v1.36.3", model.ImageHAProxy: "haproxy:3.2.21", model.ImageKeepalived: "osixia/keepalived:2.3.4",
		}), nil, ""},
		{"the earlier combined load balancer ok", setImages(map[string]string{model.ImageLoadBalancer: "zdnscloud/kube-lb:2.6.12"}), nil, ""},
		{"unknown component", setImages(map[string]string{"calico": "calico/node:v3.30"}), []string{"images.calico"}, `unknown component "calico"; give images for etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, kubelet, kubernetes, pause, coredns, haproxy, keepalived, loadbalancer or flannel`},
		{"component in upper case", setImages(map[string]string{"Etcd": "etcd:3"}), []string{`images["Etcd"]`}, "unknown component"},
		{"component with a space", setImages(map[string]string{"core dns": "x"}), []string{`images["core dns"]`}, "unknown component"},
		{"component empty", setImages(map[string]string{"": "x"}), []string{`images[""]`}, "unknown component"},
		{"image empty", setImages(map[string]string{model.ImageEtcd: ""}), []string{"images.etcd"}, "is empty"},
		{"image with a space", setImages(map[string]string{model.ImagePause: "pause 3.10"}), []string{"images.pause"}, `"pause 3.10" contains white space`},
		{"image with a newline", setImages(map[string]string{model.ImageCoreDNS: "a\nb"}), []string{"images.coredns"}, "white space"},
		{"image with command substitution", setImages(map[string]string{model.ImageEtcd: "etcd:$(id)"}), []string{"images.etcd"}, "is not an image reference"},
		{"image with an option", setImages(map[string]string{model.ImageEtcd: "--privileged"}), []string{"images.etcd"}, "is not an image reference"},
		{"bad entries in sorted order", setImages(map[string]string{model.ImagePause: "", model.ImageCoreDNS: "", model.ImageEtcd: "ok"}),
			[]string{"images.coredns", "images.pause"}, "is empty"},

		{"imageArchive unset ok", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "" }, nil, ""},
		{"imageArchive ok, existence not checked", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "v1.36/images.tar" }, nil, ""},
		{"imageArchive with a space ok", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "my images.tar" }, nil, ""},
		{"imageArchive absolute", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "/srv/images.tar" }, []string{"imageArchive"}, "is an absolute path; put the archive in the server's image directory (--image-dir"},
		{"imageArchive the database key", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "/var/lib/singlecloud/singlecloud.db.key" }, []string{"imageArchive"}, "absolute path"},
		{"imageArchive climbing out", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "../../etc/shadow" }, []string{"imageArchive"}, `must not contain ".."`},
		{"imageArchive climbing out midway", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "a/../../b.tar" }, []string{"imageArchive"}, `".."`},
		{"imageArchive not clean", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "srv//images.tar" }, []string{"imageArchive"}, "write it as srv/images.tar"},
		{"imageArchive dot", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "." }, []string{"imageArchive"}, "not a clean path to a file"},
		{"imageArchive newline", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = "a\nb.tar" }, []string{"imageArchive"}, "control characters"},
		{"imageArchive backslash", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = `..\x.tar` }, []string{"imageArchive"}, "control characters or '\\'"},
		{"imageArchive too long", func(_ *testing.T, c *model.ClusterConfig) { c.ImageArchive = strings.Repeat("a", 1025) }, []string{"imageArchive"}, "1025 characters long"},
	})
}

func TestValidateCreateDefaultedInstallerConfig(t *testing.T) {
	// A request that sets every installer field, through ApplyDefaults as
	// the server does, is accepted.
	c := model.ClusterConfig{
		Name: "prod", SSHUser: " root ", SSHKey: ed25519Key(t, ""), SingleCloudAddress: "10.0.0.9:8088",
		Network:      model.Network{Plugin: " Bridge "},
		Images:       map[string]string{" etcd ": " zdnscloud/kubernetes:v1.36.3 "},
		ImageArchive: " images.tar ",
		Nodes: []model.Node{
			{Name: "n1", Address: "10.0.0.1", Roles: roles(cp, etcd), InternalAddress: " 192.168.0.1 ", PrefixPath: " /opt/zke "},
			{Name: "n2", Address: "10.0.0.2", Roles: roles(worker), SSHPort: 2222, SSHUser: " core ",
				Labels: map[string]string{" zone ": " a "}, Taints: []model.Taint{{Key: " gpu ", Effect: " NoSchedule "}},
				Kubelet: model.KubeletOverrides{CgroupRoot: " /zke-n2 ", ExtraArgs: map[string]string{" max-pods ": " 50 "}}},
		},
	}
	c.ApplyDefaults()
	if err := ValidateCreate(c); err != nil {
		t.Fatalf("ValidateCreate(defaulted request) = %v, want nil", err)
	}
}
