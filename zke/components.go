package zke

import (
	"encoding/json"
	"fmt"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
)

// The names of zke's containers on a node.
const (
	containerEtcd              = "etcd"
	containerAPIServer         = "kube-apiserver"
	containerControllerManager = "kube-controller-manager"
	containerScheduler         = "kube-scheduler"
	containerKubelet           = "kubelet"
	containerKubeProxy         = "kube-proxy"
)

// sslPath is where a certificate file lives inside every component
// container (the node's <prefix>/etc/kubernetes/ssl is mounted there).
func sslPath(file string) string { return path.Join(dirSSL, file) }

func hostPort(addr string, port int) string { return net.JoinHostPort(addr, strconv.Itoa(port)) }

// etcdArgs is the etcd command line of n. initialCluster is fixed when n
// first joins and kept in the state, so that the spec (and its hash) of a
// running member never changes.
func etcdArgs(n node, initialCluster, clusterState, token string) []string {
	ip := n.InternalAddress
	return []string{
		"etcd",
		"--name=" + n.Name,
		"--data-dir=" + dirEtcdData,
		"--listen-client-urls=https://" + hostPort(ip, portEtcdClient) + ",https://" + hostPort("127.0.0.1", portEtcdClient),
		"--advertise-client-urls=https://" + hostPort(ip, portEtcdClient),
		"--listen-peer-urls=https://" + hostPort(ip, portEtcdPeer),
		"--initial-advertise-peer-urls=https://" + hostPort(ip, portEtcdPeer),
		"--listen-metrics-urls=http://" + hostPort("127.0.0.1", 2381),
		"--initial-cluster=" + initialCluster,
		"--initial-cluster-state=" + clusterState,
		"--initial-cluster-token=" + token,
		"--client-cert-auth=true",
		"--trusted-ca-file=" + sslPath(pki.KindEtcdCA.CertFile()),
		"--cert-file=" + sslPath(pki.KindEtcdServer.CertFile()),
		"--key-file=" + sslPath(pki.KindEtcdServer.KeyFile()),
		"--peer-client-cert-auth=true",
		"--peer-trusted-ca-file=" + sslPath(pki.KindEtcdCA.CertFile()),
		"--peer-cert-file=" + sslPath(pki.KindEtcdPeer.CertFile()),
		"--peer-key-file=" + sslPath(pki.KindEtcdPeer.KeyFile()),
		"--heartbeat-interval=500",
		"--election-timeout=5000",
		"--snapshot-count=10000",
	}
}

// etcdPeerURL is n's peer URL, as listed in --initial-cluster.
func etcdPeerURL(n node) string { return "https://" + hostPort(n.InternalAddress, portEtcdPeer) }

// etcdClientURL is n's client URL.
func etcdClientURL(n node) string { return "https://" + hostPort(n.InternalAddress, portEtcdClient) }

// apiServerArgs is the kube-apiserver command line of n.
func apiServerArgs(n node, cfg model.ClusterConfig, etcd []node) []string {
	var servers []string
	for _, e := range etcd {
		servers = append(servers, etcdClientURL(e))
	}
	issuer := "https://kubernetes.default.svc." + cfg.ClusterDomain
	args := []string{
		"kube-apiserver",
		"--advertise-address=" + n.InternalAddress,
		"--bind-address=" + n.InternalAddress,
		"--secure-port=" + strconv.Itoa(portAPIServer),
		"--etcd-servers=" + strings.Join(servers, ","),
		"--etcd-cafile=" + sslPath(pki.KindEtcdCA.CertFile()),
		"--etcd-certfile=" + sslPath(pki.KindAPIServerEtcdClient.CertFile()),
		"--etcd-keyfile=" + sslPath(pki.KindAPIServerEtcdClient.KeyFile()),
		"--service-cluster-ip-range=" + cfg.ServiceCIDR,
		"--client-ca-file=" + sslPath(pki.KindClusterCA.CertFile()),
		"--tls-cert-file=" + sslPath(pki.KindAPIServer.CertFile()),
		"--tls-private-key-file=" + sslPath(pki.KindAPIServer.KeyFile()),
		"--kubelet-client-certificate=" + sslPath(pki.KindAPIServerKubeletClient.CertFile()),
		"--kubelet-client-key=" + sslPath(pki.KindAPIServerKubeletClient.KeyFile()),
		"--kubelet-certificate-authority=" + sslPath(pki.KindClusterCA.CertFile()),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--service-account-key-file=" + sslPath(pki.KindServiceAccount.CertFile()),
		"--service-account-signing-key-file=" + sslPath(pki.KindServiceAccount.KeyFile()),
		"--service-account-issuer=" + issuer,
		"--api-audiences=" + issuer,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--anonymous-auth=true",
		"--profiling=false",
		"--requestheader-client-ca-file=" + sslPath(pki.KindFrontProxyCA.CertFile()),
		"--requestheader-allowed-names=" + pki.FrontProxyClientCN,
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + sslPath(pki.KindFrontProxyClient.CertFile()),
		"--proxy-client-key-file=" + sslPath(pki.KindFrontProxyClient.KeyFile()),
	}
	if cfg.SharedEndpoint() != "" {
		// On SIGTERM, fail /readyz but keep serving for a while: the
		// load balancer's health check takes this server out before
		// it stops listening (drainAPIServer).
		args = append(args, "--shutdown-delay-duration="+apiServerShutdownDelay.String())
	}
	return args
}

// controllerManagerArgs is the kube-controller-manager command line.
func controllerManagerArgs(cfg model.ClusterConfig) []string {
	return []string{
		"kube-controller-manager",
		"--kubeconfig=" + sslPath(pki.KindControllerManager.KubeconfigFile()),
		"--authentication-kubeconfig=" + sslPath(pki.KindControllerManager.KubeconfigFile()),
		"--authorization-kubeconfig=" + sslPath(pki.KindControllerManager.KubeconfigFile()),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(portControllerManager),
		"--leader-elect=true",
		"--use-service-account-credentials=true",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=" + cfg.ClusterCIDR,
		"--node-cidr-mask-size=24",
		"--service-cluster-ip-range=" + cfg.ServiceCIDR,
		"--cluster-name=" + cfg.Name,
		"--root-ca-file=" + sslPath(pki.KindClusterCA.CertFile()),
		"--service-account-private-key-file=" + sslPath(pki.KindServiceAccount.KeyFile()),
		"--cluster-signing-cert-file=" + sslPath(pki.KindClusterCA.SignerCertFile()),
		"--cluster-signing-key-file=" + sslPath(pki.KindClusterCA.KeyFile()),
		"--requestheader-client-ca-file=" + sslPath(pki.KindFrontProxyCA.CertFile()),
		"--profiling=false",
	}
}

// schedulerArgs is the kube-scheduler command line.
func schedulerArgs() []string {
	return []string{
		"kube-scheduler",
		"--kubeconfig=" + sslPath(pki.KindScheduler.KubeconfigFile()),
		"--authentication-kubeconfig=" + sslPath(pki.KindScheduler.KubeconfigFile()),
		"--authorization-kubeconfig=" + sslPath(pki.KindScheduler.KubeconfigFile()),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(portScheduler),
		"--leader-elect=true",
		"--profiling=false",
	}
}

// Ports of kube-proxy, bound to the node's 127.0.0.1.
const (
	portKubeProxyHealth  = 10256
	portKubeProxyMetrics = 10249
)

// kubeProxyArgs is the kube-proxy command line of n. Conntrack sizing is
// left to the host (0 = do not touch), which also lets kube-proxy run
// where those sysctls are read-only.
func kubeProxyArgs(n node, cfg model.ClusterConfig) []string {
	return []string{
		"kube-proxy",
		"--kubeconfig=" + sslPath(pki.KindKubeProxy.KubeconfigFile()),
		"--hostname-override=" + n.Name,
		"--cluster-cidr=" + cfg.ClusterCIDR,
		"--proxy-mode=iptables",
		"--bind-address=" + n.InternalAddress,
		"--healthz-bind-address=" + hostPort("127.0.0.1", portKubeProxyHealth),
		"--metrics-bind-address=" + hostPort("127.0.0.1", portKubeProxyMetrics),
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
	}
}

// kubeletConfigFile is the kubelet's KubeletConfiguration on the node.
func kubeletConfigFile(n node) string { return n.dir(path.Join(dirKubernetes, "kubelet-config.yaml")) }

// kubeletArgs is the kubelet command line of n.
func kubeletArgs(n node) []string {
	args := []string{
		"kubelet",
		"--config=" + kubeletConfigFile(n),
		"--kubeconfig=" + n.dir(sslPath(pki.KindKubelet.KubeconfigFile())),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.InternalAddress,
		"--root-dir=" + n.dir(dirKubelet),
		"--cert-dir=" + n.dir(path.Join(dirKubelet, "pki")),
	}
	extra := make([]string, 0, len(n.Kubelet.ExtraArgs))
	for k, v := range n.Kubelet.ExtraArgs {
		extra = append(extra, fmt.Sprintf("--%s=%s", k, v))
	}
	sort.Strings(extra)
	return append(args, extra...)
}

// cniNetworkName names zke's pod network in its CNI config; the
// host-local IPAM plugin keeps its state under /var/lib/cni/networks/
// by this name.
const cniNetworkName = "zke-bridge"

// bridgeCNIConfig is the pod network config of the bridge plugin for a node
// whose pods get addresses from podCIDR, written by the JSON encoder, with
// the links' MTU (0: the node's). It does not masquerade: flanneld does,
// for what leaves the pod network only (network_backend.go).
func bridgeCNIConfig(podCIDR string, mtu int) ([]byte, error) {
	type obj = map[string]any
	conf := obj{
		"cniVersion": "0.4.0",
		"name":       cniNetworkName,
		"plugins": []obj{
			{
				"type": "bridge", "bridge": "zke0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": obj{
					"type":   "host-local",
					"ranges": [][]obj{{{"subnet": podCIDR}}},
					"routes": []obj{{"dst": "0.0.0.0/0"}},
				},
			},
			{"type": "portmap", "capabilities": obj{"portMappings": true}},
			{"type": "loopback"},
		},
	}
	if mtu > 0 {
		// The pods' side of a tunnel (flannel's VXLAN) is smaller than the
		// node's link.
		conf["plugins"].([]obj)[0]["mtu"] = mtu
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the bridge CNI config: %w", err)
	}
	return append(b, '\n'), nil
}
