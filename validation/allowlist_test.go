package validation

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// checkProblem asserts that problem is "" when want is "", and otherwise
// contains want.
func checkProblem(t *testing.T, in, problem, want string) {
	t.Helper()
	switch {
	case want == "" && problem != "":
		t.Fatalf("%q: unexpected problem %q", in, problem)
	case want != "" && !strings.Contains(problem, want):
		t.Fatalf("%q: problem %q does not contain %q", in, problem, want)
	}
}

func TestSSHUserProblem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"root", ""},
		{"zke-admin", ""},
		{"core_1.x", ""},
		{"Admin", ""},
		{"", "is required"},
		{strings.Repeat("a", 33), "at most 32"},
		{"-oProxyCommand=id", "may contain only"},
		{"-root", "must not start with '-'"},
		{"root;id", "may contain only"},
		{"$(id)", "may contain only"},
		{"ro ot", "may contain only"},
		{"root\n", "may contain only"},
		{"jürgen", "may contain only"},
		{"1000", "all digits"},
		{"..", "not a user name"},
	}
	for _, tt := range tests {
		checkProblem(t, tt.in, sshUserProblem(tt.in), tt.want)
	}
}

func TestIfaceProblem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"eth0", ""},
		{"enp0s31f6", ""},
		{"br-lan.100", ""},
		{strings.Repeat("e", 15), ""},
		{strings.Repeat("e", 16), "at most 15"},
		{".", "not an interface name"},
		{"..", "not an interface name"},
		{"eth0/1", "use only letters"},
		{"eth0:1", "use only letters"},
		{"eth 0", "use only letters"},
		{"eth0\n", "use only letters"},
		{"eth0;id", "use only letters"},
		{"ethé", "use only letters"},
	}
	for _, tt := range tests {
		checkProblem(t, tt.in, ifaceProblem(tt.in), tt.want)
	}
}

func TestRegistryURLProblem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"registry.local:5000", ""},
		{"registry.example.com", ""},
		{"Registry.Example.com", ""},
		{"https://registry.example.com", ""},
		{"https://registry.example.com/", ""},
		{"http://10.0.0.5:5000", ""},
		{"[fd00::5]:5000", ""},
		{"https://[fd00::5]", ""},
		{"ftp://registry.example.com", `scheme "ftp" is not supported`},
		{"https://bob:secret@registry.example.com", "must not carry a user or password"},
		{"registry.example.com/v2/library", "has a path, query or fragment"},
		{"https://registry.example.com?x=1", "has a path, query or fragment"},
		{"https://registry.example.com#x", "has a path, query or fragment"},
		{"registry.example.com:99999", "out of range"},
		{"registry.example.com:", "not a number"},
		{"https://", "has no host"},
		{"reg_istry.local", "neither a DNS name nor an IP address"},
		{"reg$(id).local", "neither a DNS name nor an IP address"},
		{"registry.local\n", "control characters"},
		{"registry .local", "white space"},
		{"fd00::5", "is not a registry address"},
	}
	for _, tt := range tests {
		checkProblem(t, tt.in, registryURLProblem(tt.in), tt.want)
	}
}

func TestImageRefProblem(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	tests := []struct{ in, want string }{
		{"busybox", ""},
		{"zdnscloud/kubernetes:v1.36.3", ""},
		{"registry.local:5000/zdnscloud/etcd:v3.6.0", ""},
		{"localhost/pause:3.10", ""},
		{"[fd00::5]:5000/pause:3.10", ""},
		{"coredns/coredns@" + digest, ""},
		{"coredns/coredns:1.12.1@" + digest, ""},
		{"a/b__c/d-e.f:Tag_1.2-x", ""},
		{"", "is empty"},
		{"Zdnscloud/Kubernetes", "is not an image reference"},
		{"zdnscloud/kubernetes:", "is not an image reference"},
		{"zdnscloud/kubernetes:-x", "is not an image reference"},
		{"zdnscloud/kubernetes:" + strings.Repeat("t", 129), "is not an image reference"},
		{"zdnscloud//kubernetes", "is not an image reference"},
		{"/kubernetes", "is not an image reference"},
		{"kubernetes/", "is not an image reference"},
		{"-kubernetes", "is not an image reference"},
		{"pause@sha256:abc", "is not an image reference"},
		{"pause:3.10;id", "is not an image reference"},
		{"pause$(id)", "is not an image reference"},
		{"pause 3.10", "white space"},
		{"pause\t", "white space"},
		{"pause\x00", "control characters"},
		{strings.Repeat("a", 256), "repository name is 256 characters long"},
		{strings.Repeat("a", 513), "at most 512"},
	}
	for _, tt := range tests {
		checkProblem(t, tt.in, imageRefProblem(tt.in, "x:tag"), tt.want)
	}
}

func TestValidateCreateReachesNodesAllowlisted(t *testing.T) {
	runCreateCases(t, []createCase{
		{"cluster sshUser option injection", func(_ *testing.T, c *model.ClusterConfig) {
			c.SSHUser = "-oProxyCommand=id"
			for i := range c.Nodes {
				c.Nodes[i].SSHUser = c.SSHUser
			}
		}, []string{"sshUser"}, "may contain only"},
		{"node sshUser bad", onNode(1, func(n *model.Node) { n.SSHUser = "core\nx" }), []string{"nodes[1].sshUser"}, "may contain only"},
		{"node sshUser other good ok", onNode(1, func(n *model.Node) { n.SSHUser = "core" }), nil, ""},
		{"dockerSocket with a space", onNode(0, func(n *model.Node) { n.DockerSocket = "/run/my docker.sock" }), []string{"nodes[0].dockerSocket"}, "may contain only"},
		{"dockerSocket with a quote", onNode(0, func(n *model.Node) { n.DockerSocket = "/run/d'.sock" }), []string{"nodes[0].dockerSocket"}, "may contain only"},
		{"containerdSocket too long for a socket", onNode(0, func(n *model.Node) { n.ContainerdSocket = "/" + strings.Repeat("c", 107) }),
			[]string{"nodes[0].containerdSocket"}, "a Unix socket path has at most 107"},
		{"containerdSocket outside /run ok", onNode(0, func(n *model.Node) { n.ContainerdSocket = "/opt/containerd@1/run/containerd.sock" }), nil, ""},
		{"prefixPath regex characters", onNode(0, func(n *model.Node) { n.PrefixPath = "/opt/.*" }), []string{"nodes[0].prefixPath"}, "may contain only"},
		{"prefixPath backslash", onNode(0, func(n *model.Node) { n.PrefixPath = `/opt/a\b` }), []string{"nodes[0].prefixPath"}, "may contain only"},
		{"prefixPath newline", onNode(0, func(n *model.Node) { n.PrefixPath = "/opt/zke\nrm" }), []string{"nodes[0].prefixPath"}, "may contain only"},
		{"prefixPath with + and @ ok", onNode(0, func(n *model.Node) { n.PrefixPath = "/opt/zke+1@a_b-c.d" }), nil, ""},
		{"iface ok", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Iface = "eth1" }, nil, ""},
		{"iface bad", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Iface = "eth1;reboot" }, []string{"network.iface"}, "not a Linux interface name"},
		{"iface too long", func(_ *testing.T, c *model.ClusterConfig) { c.Network.Iface = "averyverylongiface" }, []string{"network.iface"}, "at most 15"},
		{"registry url with a path", func(_ *testing.T, c *model.ClusterConfig) { c.PrivateRegistries[0].URL = "https://r.local/x" },
			[]string{"privateRegistries[0].url"}, "has a path"},
		{"registry user with a newline", func(_ *testing.T, c *model.ClusterConfig) { c.PrivateRegistries[0].User = "a\nb" },
			[]string{"privateRegistries[0].user"}, "control character"},
		{"registry caCert not PEM", func(_ *testing.T, c *model.ClusterConfig) { c.PrivateRegistries[0].CACert = "PEM" },
			[]string{"privateRegistries[0].caCert"}, "is not PEM"},
		{"registry caCert a key", func(_ *testing.T, c *model.ClusterConfig) { c.PrivateRegistries[0].CACert = ed25519Key(t, "") },
			[]string{"privateRegistries[0].caCert"}, "not a certificate"},
	})
}

func TestCACertProblem(t *testing.T) {
	cert := selfSignedPEM(t)
	tests := []struct{ in, want string }{
		{cert, ""},
		{cert + cert, ""},
		{cert + "trailing", "is not PEM"},
		{"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "cannot be parsed"},
	}
	for _, tt := range tests {
		checkProblem(t, tt.in, caCertProblem(tt.in), tt.want)
	}
}

// selfSignedPEM returns a fresh self-signed certificate in PEM.
func selfSignedPEM(t *testing.T) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<31, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
