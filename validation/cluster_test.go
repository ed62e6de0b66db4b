package validation

import (
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// createCase changes a valid cluster and says which fields must then fail
// (none: the change is allowed).
type createCase struct {
	name   string
	mutate func(t *testing.T, c *model.ClusterConfig)
	want   []string
	reason string // substring of the first violation's reason
}

func TestValidateCreateValidCluster(t *testing.T) {
	if err := ValidateCreate(validCluster(t)); err != nil {
		t.Fatalf("ValidateCreate(validCluster) = %v, want nil", err)
	}
}

func TestValidateCreateRules(t *testing.T) {
	setNode := func(i int, n model.Node) func(*testing.T, *model.ClusterConfig) {
		return func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[i] = n }
	}
	setRoles := func(i int, rs ...model.Role) func(*testing.T, *model.ClusterConfig) {
		return func(_ *testing.T, c *model.ClusterConfig) { c.Nodes[i].Roles = rs }
	}
	tests := []createCase{
		// Cluster name: required, DNS-1123 label.
		{"name empty", func(_ *testing.T, c *model.ClusterConfig) { c.Name = "" }, []string{"name"}, "is required"},
		{"name upper case", func(_ *testing.T, c *model.ClusterConfig) { c.Name = "Prod" }, []string{"name"}, "lower case"},
		{"name with a dot", func(_ *testing.T, c *model.ClusterConfig) { c.Name = "prod.a" }, []string{"name"}, "only lower-case letters, digits and '-'"},
		{"name starts with dash", func(_ *testing.T, c *model.ClusterConfig) { c.Name = "-prod" }, []string{"name"}, "start and end"},
		{"name ends with dash", func(_ *testing.T, c *model.ClusterConfig) { c.Name = "prod-" }, []string{"name"}, "start and end"},
		{"name 64 characters", func(_ *testing.T, c *model.ClusterConfig) { c.Name = strings.Repeat("a", 64) }, []string{"name"}, "at most 63"},
		{"name 63 characters ok", func(_ *testing.T, c *model.ClusterConfig) { c.Name = strings.Repeat("a", 63) }, nil, ""},
		{"name with digits and dash ok", func(_ *testing.T, c *model.ClusterConfig) { c.Name = "1-prod-2" }, nil, ""},

		// SSH settings.
		{"sshUser empty", func(_ *testing.T, c *model.ClusterConfig) { c.SSHUser = "" }, []string{"sshUser"}, "is required"},
		{"sshKey empty", func(_ *testing.T, c *model.ClusterConfig) { c.SSHKey = "" }, []string{"sshKey"}, "is required"},
		{"sshKey is a public key", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGf3tN8v0Qm8 user@host"
		}, []string{"sshKey"}, "does not look like a PEM private key"},
		{"sshKey PEM of garbage", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHKey = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
		}, []string{"sshKey"}, "cannot be used as an SSH private key"},
		{"sshKey is a certificate", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHKey = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
		}, []string{"sshKey"}, "not a private key"},
		{"sshKey encrypted", func(t *testing.T, c *model.ClusterConfig) { c.SSHKey = ed25519Key(t, "hunter2") }, []string{"sshKey"}, "encrypted with a passphrase"},
		{"sshKey RSA PKCS#1 ok", func(t *testing.T, c *model.ClusterConfig) { c.SSHKey = rsaKey(t) }, nil, ""},
		{"sshKey without trailing newline ok", func(_ *testing.T, c *model.ClusterConfig) { c.SSHKey = strings.TrimSpace(c.SSHKey) }, nil, ""},
		{"sshPort 0", func(_ *testing.T, c *model.ClusterConfig) { c.SSHPort = 0 }, []string{"sshPort"}, "between 1 and 65535"},
		{"sshPort negative", func(_ *testing.T, c *model.ClusterConfig) { c.SSHPort = -22 }, []string{"sshPort"}, "out of range"},
		{"sshPort 65536", func(_ *testing.T, c *model.ClusterConfig) { c.SSHPort = 65536 }, []string{"sshPort"}, "out of range"},
		{"sshPort 1 ok", func(_ *testing.T, c *model.ClusterConfig) { c.SSHPort = 1 }, nil, ""},
		{"sshPort 65535 ok", func(_ *testing.T, c *model.ClusterConfig) { c.SSHPort = 65535 }, nil, ""},

		// singleCloudAddress: ip:port.
		{"singleCloudAddress empty", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "" }, []string{"singleCloudAddress"}, "is required"},
		{"singleCloudAddress without port", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.9" }, []string{"singleCloudAddress"}, "ip:port"},
		{"singleCloudAddress host name", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "sc.local:8088" }, []string{"singleCloudAddress"}, "not an IP address"},
		{"singleCloudAddress unspecified", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "0.0.0.0:8088" }, []string{"singleCloudAddress"}, "unspecified"},
		{"singleCloudAddress port not a number", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.9:http" }, []string{"singleCloudAddress"}, "not a number"},
		{"singleCloudAddress port 0", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.9:0" }, []string{"singleCloudAddress"}, "out of range"},
		{"singleCloudAddress port 65536", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.9:65536" }, []string{"singleCloudAddress"}, "out of range"},
		{"singleCloudAddress IPv6 ok", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "[fd00::9]:65535" }, nil, ""},

		// clusterDomain: DNS subdomain.
		{"clusterDomain empty", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "" }, []string{"clusterDomain"}, "is required"},
		{"clusterDomain upper case", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "Cluster.local" }, []string{"clusterDomain"}, "lower case"},
		{"clusterDomain double dot", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "cluster..local" }, []string{"clusterDomain"}, "empty label"},
		{"clusterDomain trailing dot", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "cluster.local." }, []string{"clusterDomain"}, "empty label"},
		{"clusterDomain label with underscore", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "my_corp.local" }, []string{"clusterDomain"}, "not a valid domain"},
		{"clusterDomain too long", func(_ *testing.T, c *model.ClusterConfig) {
			c.ClusterDomain = strings.Repeat(strings.Repeat("a", 63)+".", 4) + "local"
		}, []string{"clusterDomain"}, "at most 253"},
		{"clusterDomain single label ok", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "local" }, nil, ""},
		{"clusterDomain many labels ok", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDomain = "k8s.corp-1.example.com" }, nil, ""},

		// Nodes: name, address, roles present and valid.
		{"node name empty", setNode(1, withDefaults(model.Node{Address: "10.0.0.2", Roles: roles(worker, etcd)})), []string{"nodes[1].name"}, "is required"},
		{"node name not a label", setNode(1, withDefaults(model.Node{Name: "N2", Address: "10.0.0.2", Roles: roles(worker, etcd)})), []string{"nodes[1].name"}, "DNS-1123 label"},
		{"node address empty", setNode(2, withDefaults(model.Node{Name: "n3", Roles: roles(worker)})), []string{"nodes[2].address"}, "is required"},
		{"node address a host name", setNode(2, withDefaults(model.Node{Name: "n3", Address: "node3.local", Roles: roles(worker)})), []string{"nodes[2].address"}, "not an IP address"},
		{"node address with zone", setNode(2, withDefaults(model.Node{Name: "n3", Address: "fe80::3%eth0", Roles: roles(worker)})), []string{"nodes[2].address"}, "not an IP address"},
		{"node address unspecified", setNode(2, withDefaults(model.Node{Name: "n3", Address: "0.0.0.0", Roles: roles(worker)})), []string{"nodes[2].address"}, "unspecified"},
		{"node address IPv6 ok", setNode(2, withDefaults(model.Node{Name: "n3", Address: "fd00::3", Roles: roles(worker)})), nil, ""},
		{"node roles empty", setRoles(2), []string{"nodes[2].roles"}, "at least one role"},
		{"node roles nil", setRoles(2, nil...), []string{"nodes[2].roles"}, "at least one role"},
		{"node role unknown", setRoles(2, worker, "master"), []string{"nodes[2].roles"}, `unknown role "master"`},
		{"node role repeated", setRoles(2, worker, worker), []string{"nodes[2].roles"}, "repeated"},
		{"controlplane and worker exclusive", setRoles(2, cp, worker), []string{"nodes[2].roles"}, "controlplane and worker are exclusive"},
		{"etcd alone", setRoles(2, etcd), []string{"nodes[2].roles"}, "etcd cannot stand alone"},
		{"edge alone", setRoles(2, edge), []string{"nodes[2].roles"}, "edge cannot stand alone"},
		{"etcd and edge alone", setRoles(2, etcd, edge), []string{"nodes[2].roles"}, "etcd and edge cannot stand alone"},
		{"edge with controlplane ok", setRoles(2, cp, edge), nil, ""},
		{"worker only ok", setRoles(2, worker), nil, ""},
		{"controlplane only ok", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = append(c.Nodes, withDefaults(model.Node{Name: "n4", Address: "10.0.0.4", Roles: roles(cp)}))
		}, nil, ""},

		// No two nodes share a name or an address.
		{"duplicate node name", setNode(2, withDefaults(model.Node{Name: "n1", Address: "10.0.0.3", Roles: roles(worker)})), []string{"nodes[2].name"}, "already the name of nodes[0]"},
		{"duplicate node address", setNode(2, withDefaults(model.Node{Name: "n3", Address: "10.0.0.1", Roles: roles(worker)})), []string{"nodes[2].address"}, "already the address of nodes[0]"},
		{"duplicate node address in another spelling", setNode(2, withDefaults(model.Node{Name: "n3", Address: "::ffff:10.0.0.2", Roles: roles(worker)})), []string{"nodes[2].address"}, "already the address of nodes[1]"},
		{"distinct names and addresses ok", setNode(2, withDefaults(model.Node{Name: "n33", Address: "10.0.0.33", Roles: roles(worker)})), nil, ""},

		// At least one controlplane, etcd and worker node.
		{"no controlplane", setRoles(0, worker, etcd), []string{"nodes"}, "at least one controlplane node"},
		{"no etcd", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes[0].Roles = roles(cp)
			c.Nodes[1].Roles = roles(worker)
		}, []string{"nodes"}, "at least one etcd node"},
		{"no worker", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = c.Nodes[:1]
		}, []string{"nodes"}, "at least one worker node"},
		{"no nodes", func(_ *testing.T, c *model.ClusterConfig) { c.Nodes = nil }, []string{"nodes", "nodes", "nodes"}, "controlplane"},
		{"one node of each kind ok", func(_ *testing.T, c *model.ClusterConfig) {
			c.Nodes = []model.Node{
				withDefaults(model.Node{Name: "a", Address: "10.0.0.1", Roles: roles(cp, etcd)}),
				withDefaults(model.Node{Name: "b", Address: "10.0.0.2", Roles: roles(worker)}),
			}
		}, nil, ""},

		// No node is the singlecloud server.
		{"node is the singlecloud server", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.3:8088" }, []string{"nodes[2].address"}, "singlecloud server itself"},
		{"node is the singlecloud server, other spelling", func(_ *testing.T, c *model.ClusterConfig) {
			c.SingleCloudAddress = "[::ffff:10.0.0.2]:443"
		}, []string{"nodes[1].address"}, "singlecloud server itself"},
		{"singlecloud server on its own host ok", func(_ *testing.T, c *model.ClusterConfig) { c.SingleCloudAddress = "10.0.0.10:8088" }, nil, ""},

		// Pod and service networks.
		{"clusterCidr empty", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterCIDR = "" }, []string{"clusterCidr"}, "is required"},
		{"clusterCidr without bits", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterCIDR = "10.42.0.0" }, []string{"clusterCidr"}, "not a CIDR"},
		{"clusterCidr bad IP", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterCIDR = "10.420.0.0/16" }, []string{"clusterCidr"}, "not a CIDR"},
		{"clusterCidr host bits set", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterCIDR = "10.42.0.1/16" }, []string{"clusterCidr"}, "did you mean 10.42.0.0/16"},
		{"serviceCidr empty", func(_ *testing.T, c *model.ClusterConfig) { c.ServiceCIDR = "" }, []string{"serviceCidr"}, "is required"},
		{"serviceCidr not a CIDR", func(_ *testing.T, c *model.ClusterConfig) { c.ServiceCIDR = "services" }, []string{"serviceCidr"}, "not a CIDR"},
		{"serviceCidr inside clusterCidr", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterCIDR = "10.0.0.0/8" }, []string{"serviceCidr"}, "overlaps clusterCidr 10.0.0.0/8"},
		{"serviceCidr equal to clusterCidr", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterCIDR = "10.43.0.0/16" }, []string{"serviceCidr"}, "overlaps"},
		{"adjacent networks ok", func(_ *testing.T, c *model.ClusterConfig) {
			c.ClusterCIDR = "10.42.0.0/16"
			c.ServiceCIDR = "10.43.0.0/24"
		}, nil, ""},
		{"IPv6 service network ok", func(_ *testing.T, c *model.ClusterConfig) {
			c.ServiceCIDR, c.ClusterDNSServiceIP = "fd00:43::/112", "fd00:43::a"
		}, nil, ""},
		{"IPv6 pod network refused", func(_ *testing.T, c *model.ClusterConfig) {
			c.ClusterCIDR, c.ServiceCIDR, c.ClusterDNSServiceIP, c.Network.Plugin = "fd00:42::/56", "fd00:43::/112", "fd00:43::a", model.PluginBridge
		}, []string{"clusterCidr"}, "IPv6 network"},

		// Cluster DNS service IP inside the service network.
		{"clusterDNSServiceIP empty", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDNSServiceIP = "" }, []string{"clusterDNSServiceIP"}, "is required"},
		{"clusterDNSServiceIP not an IP", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDNSServiceIP = "kube-dns" }, []string{"clusterDNSServiceIP"}, "not an IP address"},
		{"clusterDNSServiceIP outside serviceCidr", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDNSServiceIP = "10.44.0.10" }, []string{"clusterDNSServiceIP"}, "outside serviceCidr 10.43.0.0/16"},
		{"clusterDNSServiceIP network address", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDNSServiceIP = "10.43.0.0" }, []string{"clusterDNSServiceIP"}, "network address"},
		{"clusterDNSServiceIP is the API service IP", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDNSServiceIP = "10.43.0.1" }, []string{"clusterDNSServiceIP"}, "Kubernetes API service"},
		{"clusterDNSServiceIP not compared with a bad serviceCidr", func(_ *testing.T, c *model.ClusterConfig) { c.ServiceCIDR = "10.43.0.0/33" }, []string{"serviceCidr"}, "not a CIDR"},
		{"clusterDNSServiceIP last address ok", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterDNSServiceIP = "10.43.255.254" }, nil, ""},

		// Upstream DNS servers are IPs.
		{"clusterUpstreamDNS host name", func(_ *testing.T, c *model.ClusterConfig) {
			c.ClusterUpstreamDNS = []string{"8.8.8.8", "dns.google"}
		}, []string{"clusterUpstreamDNS[1]"}, "not an IP address"},
		{"clusterUpstreamDNS empty entry", func(_ *testing.T, c *model.ClusterConfig) {
			c.ClusterUpstreamDNS = []string{""}
		}, []string{"clusterUpstreamDNS[0]"}, "is empty"},
		{"clusterUpstreamDNS IPv4 and IPv6 ok", func(_ *testing.T, c *model.ClusterConfig) {
			c.ClusterUpstreamDNS = []string{"1.1.1.1", "2606:4700:4700::1111"}
		}, nil, ""},
		{"clusterUpstreamDNS none ok", func(_ *testing.T, c *model.ClusterConfig) { c.ClusterUpstreamDNS = nil }, nil, ""},

		// Network plugin.
		{"network.plugin empty", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Plugin = "" }, []string{"network.plugin"}, "is required"},
		{"network.plugin unknown", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Plugin = "weave" }, []string{"network.plugin"}, `"weave" is not a supported network plugin`},
		{"network.plugin calico not installable", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Plugin = model.PluginCalico }, []string{"network.plugin"},
			`"calico" cannot be installed by this build (its images are not bundled); this build installs flannel or bridge`},
		{"network.plugin flannel", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Plugin = model.PluginFlannel }, nil, ""},
		{"network.plugin flannel on IPv6", func(_ *testing.T, c *model.ClusterConfig) {
			c.Network.Plugin, c.ClusterCIDR, c.ServiceCIDR, c.ClusterDNSServiceIP = model.PluginFlannel, "fd00:42::/56", "fd00:43::/112", "fd00:43::a"
		}, []string{"clusterCidr"}, "fd00:42::/56 is an IPv6 network"},
		{"network.plugin bridge ok", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Plugin = model.PluginBridge }, nil, ""},
		{"network.plugin upper case", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Plugin = "Bridge" }, []string{"network.plugin"}, "use flannel or bridge"},

		// Private registries.
		{"privateRegistries url empty", func(_ *testing.T, c *model.ClusterConfig) {
			c.PrivateRegistries = append(c.PrivateRegistries, model.PrivateRegistry{User: "u"})
		}, []string{"privateRegistries[1].url"}, "is required"},
		{"privateRegistries none ok", func(_ *testing.T, c *model.ClusterConfig) { c.PrivateRegistries = nil }, nil, ""},

		// Kubernetes version.
		{"kubernetesVersion empty", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "" }, []string{"kubernetesVersion"}, "is required"},
		{"kubernetesVersion without v", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "1.36.3" }, []string{"kubernetesVersion"}, "vMAJOR.MINOR.PATCH"},
		{"kubernetesVersion without patch", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v1.36" }, []string{"kubernetesVersion"}, "vMAJOR.MINOR.PATCH"},
		{"kubernetesVersion pre-release", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v1.36.3-rc.1" }, []string{"kubernetesVersion"}, "vMAJOR.MINOR.PATCH"},
		{"kubernetesVersion leading zero", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v1.036.3" }, []string{"kubernetesVersion"}, "vMAJOR.MINOR.PATCH"},
		{"kubernetesVersion empty part", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v1..3" }, []string{"kubernetesVersion"}, "vMAJOR.MINOR.PATCH"},
		{"kubernetesVersion other ok", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v1.30.0" }, nil, ""},
		{"kubernetesVersion multi-digit ok", func(_ *testing.T, c *model.ClusterConfig) { c.KubernetesVersion = "v10.100.20" }, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			tt.mutate(t, &c)
			checkViolations(t, ValidateCreate(c), tt.want, tt.reason)
		})
	}
}

func TestValidateCreateReportsEveryViolationAtOnce(t *testing.T) {
	c := validCluster(t)
	c.Name = "Prod"
	c.SSHUser = ""
	c.SSHKey = ""
	c.SSHPort = 70000
	c.SingleCloudAddress = "10.0.0.1:8088"
	c.ClusterDomain = ""
	c.ServiceCIDR = "10.42.0.0/24"
	c.ClusterDNSServiceIP = "10.43.0.10"
	c.ClusterUpstreamDNS = []string{"dns"}
	c.Network.Plugin = "weave"
	c.PrivateRegistries = []model.PrivateRegistry{{URL: "r.local"}, {}}
	c.KubernetesVersion = "latest"
	c.Nodes = []model.Node{
		withDefaults(model.Node{Name: "n1", Address: "10.0.0.1", Roles: roles(cp, etcd)}),
		withDefaults(model.Node{Name: "n1", Address: "10.0.0.2", Roles: roles(cp, worker)}),
		withDefaults(model.Node{Name: "", Address: "", Roles: roles(edge)}),
	}

	errs := fieldErrors(t, ValidateCreate(c))
	want := []FieldError{
		{"name", `"Prod" must be lower case (a cluster name is a DNS-1123 label)`},
		{"sshUser", "is required: give the user zke logs in to the nodes as"},
		{"sshKey", "is required: paste the private key zke logs in to the nodes with"},
		{"sshPort", "70000 is out of range; use a port between 1 and 65535"},
		{"clusterDomain", "is required: give the cluster's DNS domain, like cluster.local"},
		{"serviceCidr", "10.42.0.0/24 overlaps clusterCidr 10.42.0.0/16; the pod and service networks must not share addresses"},
		{"clusterDNSServiceIP", "10.43.0.10 is outside serviceCidr 10.42.0.0/24; pick an IP inside it"},
		{"clusterUpstreamDNS[0]", `"dns" is not an IP address; give the IP of a DNS server, like 8.8.8.8`},
		{"network.plugin", `"weave" is not a supported network plugin; use flannel or bridge`},
		{"privateRegistries[1].url", "is required: give the registry address, like registry.example.com:5000"},
		{"kubernetesVersion", `"latest" is not a Kubernetes release; write it like v1.36.3 (vMAJOR.MINOR.PATCH)`},
		{"nodes[0].address", "10.0.0.1 is the singlecloud server itself (singleCloudAddress); singlecloud cannot install a cluster on the host it runs on, so use another host"},
		{"nodes[1].name", `"n1" is already the name of nodes[0]; node names must be unique`},
		{"nodes[1].roles", "controlplane and worker are exclusive; a node is either a controlplane or a worker node"},
		{"nodes[2].name", "is required: give every node a name"},
		{"nodes[2].address", "is required: give the IP address zke reaches the node at over SSH"},
		{"nodes[2].roles", "edge cannot stand alone; add controlplane or worker to the node"},
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d violations, want %d:\n%v", len(errs), len(want), errs)
	}
	for i := range want {
		if errs[i] != want[i] {
			t.Errorf("violation %d:\n got  %q\n want %q", i, errs[i], want[i])
		}
	}
	msg := errs.Error()
	if !strings.HasPrefix(msg, `name: "Prod" must be lower case (a cluster name is a DNS-1123 label); sshUser: is required`) {
		t.Errorf("Error() = %q, want the violations joined with \"; \"", msg)
	}
	if got := strings.Count(msg, "; "); got < len(want)-1 {
		t.Errorf("Error() joins %d separators, want at least %d: %q", got, len(want)-1, msg)
	}
}

func TestValidateCreateNeverQuotesTheKey(t *testing.T) {
	c := validCluster(t)
	c.SSHKey = strings.Replace(c.SSHKey, "OPENSSH PRIVATE KEY", "RSA PRIVATE KEY", 2)
	err := ValidateCreate(c)
	checkViolations(t, err, []string{"sshKey"}, `holds a "RSA PRIVATE KEY" block that cannot be used as an SSH private key`)
	body := strings.Split(strings.TrimSpace(c.SSHKey), "\n")
	for _, line := range body[1 : len(body)-1] {
		if strings.Contains(err.Error(), line) {
			t.Fatalf("error %q quotes key material %q", err, line)
		}
	}
}
