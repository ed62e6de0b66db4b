package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Component names, also the names of their logs.
const (
	componentEtcd              = "etcd"
	componentAPIServer         = "kube-apiserver"
	componentControllerManager = "kube-controller-manager"
	componentScheduler         = "kube-scheduler"
)

// Cluster addressing.
const (
	// Inside a host the network namespace is the host's own, so the
	// well-known ports are free.
	hostAPIServerPort  = 6443
	hostEtcdClientPort = 2379
	hostEtcdPeerPort   = 2380
	// serviceCIDR is the service range; its first address, the kubernetes
	// service's ClusterIP, is in the serving certificate.
	serviceCIDR         = "10.96.0.0/16"
	kubernetesServiceIP = "10.96.0.1"
	// serviceAccountIssuer is the "iss" of service account tokens.
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	// adminUser and tokenUser are the system:masters identities of
	// Kubeconfig and Token.
	adminUser = "testbed-admin"
	tokenUser = "testbed-token-admin"
)

// addresses are where the control plane listens; etcd always listens on
// loopback (the test's or the host's).
type addresses struct {
	bind       string
	apiPort    int
	etcdClient int
	etcdPeer   int
}

func (a addresses) apiServer() string { return net.JoinHostPort(a.bind, strconv.Itoa(a.apiPort)) }

func hostAddresses(ip string) addresses {
	return addresses{bind: ip, apiPort: hostAPIServerPort, etcdClient: hostEtcdClientPort, etcdPeer: hostEtcdPeerPort}
}

// loopbackAddresses picks three free loopback ports. They are found by
// binding port 0 and closing, so another process could take one before the
// component binds it; the kernel picks ports at random, which makes that
// rare, and the start then fails loudly.
func loopbackAddresses() (addresses, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	var ports []int
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return addresses{}, fmt.Errorf("find a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return addresses{bind: "127.0.0.1", apiPort: ports[0], etcdClient: ports[1], etcdPeer: ports[2]}, nil
}

// pki returns the path of a file in the PKI directory.
func (cp *ControlPlane) pki(name string) string { return filepath.Join(cp.Dir, "pki", name) }

// writePKI generates the CA, serving, client and service account keys and
// the kubeconfigs, and writes those the components read.
func (cp *ControlPlane) writePKI(addr addresses) error {
	ca, err := newAuthority("singlecloud-testbed-ca")
	if err != nil {
		return err
	}
	cp.ca, cp.CA = ca, ca.certPEM
	files := map[string][]byte{"ca.crt": ca.certPEM, "ca.key": ca.keyPEM}

	ips := []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP(kubernetesServiceIP), net.ParseIP(addr.bind)}
	dns := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	issued := []struct {
		file string
		req  certRequest
	}{
		{"apiserver", certRequest{commonName: "kube-apiserver", dnsNames: dns, ips: ips, server: true}},
		{"apiserver-kubelet-client", certRequest{commonName: "kube-apiserver-kubelet-client", organizations: []string{"system:masters"}, client: true}},
		{"admin", certRequest{commonName: adminUser, organizations: []string{"system:masters"}, client: true}},
		{"controller-manager", certRequest{commonName: "system:kube-controller-manager", client: true}},
		{"scheduler", certRequest{commonName: "system:kube-scheduler", client: true}},
	}
	pairs := map[string][2][]byte{}
	for _, is := range issued {
		certPEM, keyPEM, err := ca.issue(is.req)
		if err != nil {
			return err
		}
		pairs[is.file] = [2][]byte{certPEM, keyPEM}
		files[is.file+".crt"], files[is.file+".key"] = certPEM, keyPEM
	}

	saKey, saKeyPEM, err := newKey()
	if err != nil {
		return err
	}
	saPub, err := publicKeyPEM(saKey)
	if err != nil {
		return err
	}
	files["sa.key"], files["sa.pub"] = saKeyPEM, saPub

	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return fmt.Errorf("generate token: %w", err)
	}
	cp.Token = hex.EncodeToString(token)
	files["tokens.csv"] = fmt.Appendf(nil, "%s,%s,%s,\"system:masters\"\n", cp.Token, tokenUser, tokenUser)

	for name, data := range files {
		if err := os.WriteFile(cp.pki(name), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", cp.pki(name), err)
		}
	}

	kubeconfigs := map[string]*[]byte{"admin": &cp.Kubeconfig}
	var kcm, sched []byte
	kubeconfigs["controller-manager"], kubeconfigs["scheduler"] = &kcm, &sched
	for name, out := range kubeconfigs {
		pair := pairs[name]
		data, err := buildKubeconfig(cp.URL, cp.CA, &clientcmdapi.AuthInfo{ClientCertificateData: pair[0], ClientKeyData: pair[1]})
		if err != nil {
			return err
		}
		*out = data
		if err := os.WriteFile(filepath.Join(cp.Dir, name+".kubeconfig"), data, 0o600); err != nil {
			return fmt.Errorf("write kubeconfig: %w", err)
		}
	}
	if cp.adminTLS, err = tlsConfig(cp.CA, pairs["admin"][0], pairs["admin"][1]); err != nil {
		return err
	}

	wrong, err := newAuthority("unrelated-ca")
	if err != nil {
		return err
	}
	admin := pairs["admin"]
	cp.wrongCAKubeconfig, err = buildKubeconfig(cp.URL, wrong.certPEM, &clientcmdapi.AuthInfo{ClientCertificateData: admin[0], ClientKeyData: admin[1]})
	return err
}

// componentsFor lists the components in start order with their flags.
func (cp *ControlPlane) componentsFor(bin string, addr addresses, opts ControlPlaneOptions) []component {
	etcdClient := fmt.Sprintf("http://127.0.0.1:%d", addr.etcdClient)
	etcdPeer := fmt.Sprintf("http://127.0.0.1:%d", addr.etcdPeer)
	logs := func(name string) string { return filepath.Join(cp.Dir, "logs", name+".log") }
	var apiServerExtra []string
	if net.ParseIP(addr.bind).IsLoopback() {
		// The kubernetes service cannot point at a loopback address, and no
		// pod could use it anyway: do not maintain its endpoints.
		apiServerExtra = append(apiServerExtra, "--endpoint-reconciler-type=none")
	}
	apiServerExtra = append(apiServerExtra, opts.APIServerArgs...)
	cs := []component{
		{name: componentEtcd, args: []string{
			"--name=testbed", "--data-dir=" + filepath.Join(cp.Dir, "etcd"),
			"--listen-client-urls=" + etcdClient, "--advertise-client-urls=" + etcdClient,
			"--listen-peer-urls=" + etcdPeer, "--initial-advertise-peer-urls=" + etcdPeer,
			"--initial-cluster=testbed=" + etcdPeer, "--initial-cluster-state=new",
			// A test's data need not survive a machine crash.
			"--unsafe-no-fsync", "--log-level=warn",
		}},
		{name: componentAPIServer, args: append([]string{
			"--etcd-servers=" + etcdClient,
			"--bind-address=" + addr.bind, "--advertise-address=" + addr.bind, "--secure-port=" + strconv.Itoa(addr.apiPort),
			"--tls-cert-file=" + cp.pki("apiserver.crt"), "--tls-private-key-file=" + cp.pki("apiserver.key"),
			"--client-ca-file=" + cp.pki("ca.crt"), "--token-auth-file=" + cp.pki("tokens.csv"),
			"--service-account-issuer=" + serviceAccountIssuer,
			"--service-account-key-file=" + cp.pki("sa.pub"), "--service-account-signing-key-file=" + cp.pki("sa.key"),
			"--service-cluster-ip-range=" + serviceCIDR,
			"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
			"--allow-privileged=true", "--profiling=false",
			"--kubelet-client-certificate=" + cp.pki("apiserver-kubelet-client.crt"),
			"--kubelet-client-key=" + cp.pki("apiserver-kubelet-client.key"),
			"--kubelet-preferred-address-types=InternalIP,Hostname",
		}, apiServerExtra...)},
		{name: componentControllerManager, args: []string{
			"--kubeconfig=" + filepath.Join(cp.Dir, "controller-manager.kubeconfig"),
			"--secure-port=0", "--leader-elect=false",
			"--service-account-private-key-file=" + cp.pki("sa.key"), "--root-ca-file=" + cp.pki("ca.crt"),
			"--use-service-account-credentials=true",
			"--cluster-signing-cert-file=" + cp.pki("ca.crt"), "--cluster-signing-key-file=" + cp.pki("ca.key"),
		}},
	}
	if opts.Scheduler {
		cs = append(cs, component{name: componentScheduler, args: []string{
			"--kubeconfig=" + filepath.Join(cp.Dir, "scheduler.kubeconfig"), "--secure-port=0", "--leader-elect=false",
		}})
	}
	for i := range cs {
		cs[i].binary = filepath.Join(bin, "bin", cs[i].name)
		cs[i].log = logs(cs[i].name)
	}
	return cs
}
