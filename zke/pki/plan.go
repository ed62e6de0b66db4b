package pki

import (
	"crypto/x509"
	"net/netip"
	"slices"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Subjects that components and RBAC rely on. The kubelet identity is
// system:node:<name> in the group system:nodes (the Node authorizer and
// NodeRestriction need exactly that).
const (
	// APIServerCN is the kube-apiserver serving certificate's CN.
	APIServerCN = "kube-apiserver"
	// APIServerEtcdClientCN is the user kube-apiserver presents to etcd.
	APIServerEtcdClientCN = "kube-apiserver-etcd-client"
	// APIServerKubeletClientCN is the user kube-apiserver presents to the
	// kubelets. Like kubeadm v1.36, the certificate carries no group (in
	// particular not system:masters, whose rights cannot be revoked); the
	// cluster-setup step binds this user to KubeletAPIAdminClusterRole with
	// a ClusterRoleBinding named KubeletAPIAdminBinding.
	APIServerKubeletClientCN = "kube-apiserver-kubelet-client"
	// KubeletAPIAdminClusterRole is the built-in ClusterRole granting full
	// access to the kubelet API.
	KubeletAPIAdminClusterRole = "system:kubelet-api-admin"
	// KubeletAPIAdminBinding is the ClusterRoleBinding that grants
	// KubeletAPIAdminClusterRole to the user APIServerKubeletClientCN.
	KubeletAPIAdminBinding = "zke:apiserver-kubelet-client"
	// FrontProxyClientCN is the user kube-apiserver presents to aggregated
	// API servers; pass it to --requestheader-allowed-names.
	FrontProxyClientCN = "front-proxy-client"
	// ControllerManagerCN, SchedulerCN and KubeProxyCN are the users the
	// default RBAC policy grants the components' rights to.
	ControllerManagerCN = "system:kube-controller-manager"
	SchedulerCN         = "system:kube-scheduler"
	KubeProxyCN         = "system:kube-proxy"
	// AdminCN is the administrator's user until the first rotation gives
	// it another (Input.AdminUser); AdminBinding binds that user to the
	// ClusterRole AdminClusterRole.
	AdminCN          = "kube-admin"
	AdminBinding     = "zke:admin"
	AdminClusterRole = "cluster-admin"
	// SuperAdminCN is zke's own user; AdminGroup gives it every right.
	SuperAdminCN = "kube-super-admin"
	AdminGroup   = "system:masters"
	// NodeUserPrefix + node name is a kubelet's user; NodesGroup its group.
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// spec is what one certificate must look like: its authority, subject,
// SANs and usages. Two certificates with the same spec are
// interchangeable.
type spec struct {
	ca     Kind
	cn     string
	orgs   []string
	dns    []string     // sorted, no duplicates
	ips    []netip.Addr // sorted, no duplicates, IPv4 unmapped
	usages []x509.ExtKeyUsage
}

// serverUsage, clientUsage and bothUsage are the extended key usages of
// serving, client and dual-purpose (etcd) certificates; functions, so that
// no caller can change a shared table.
func serverUsage() []x509.ExtKeyUsage { return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }
func clientUsage() []x509.ExtKeyUsage { return []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} }
func bothUsage() []x509.ExtKeyUsage {
	return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
}

// plan returns the spec of every leaf certificate the normalized input
// needs, by ID.
func plan(in Input, serviceIP netip.Addr) map[ID]spec {
	out := map[ID]spec{
		ID(KindAPIServerEtcdClient):    {ca: KindEtcdCA, cn: APIServerEtcdClientCN, usages: clientUsage()},
		ID(KindAPIServerKubeletClient): {ca: KindClusterCA, cn: APIServerKubeletClientCN, usages: clientUsage()},
		ID(KindFrontProxyClient):       {ca: KindFrontProxyCA, cn: FrontProxyClientCN, usages: clientUsage()},
		ID(KindControllerManager):      {ca: KindClusterCA, cn: ControllerManagerCN, usages: clientUsage()},
		ID(KindScheduler):              {ca: KindClusterCA, cn: SchedulerCN, usages: clientUsage()},
		ID(KindKubeProxy):              {ca: KindClusterCA, cn: KubeProxyCN, usages: clientUsage()},
		ID(KindAdmin):                  {ca: KindClusterCA, cn: in.AdminUser, usages: clientUsage()},
		ID(KindSuperAdmin):             {ca: KindClusterCA, cn: SuperAdminCN, orgs: []string{AdminGroup}, usages: clientUsage()},
	}
	apiserverDNS, apiserverIPs := apiserverSANs(in, serviceIP)
	for _, n := range in.Nodes {
		nodeDNS, nodeIPs := sans(n.Address, n.InternalAddress, n.Name)
		if n.HasRole(model.RoleControlPlane) {
			out[NodeID(KindAPIServer, n.Name)] = spec{ca: KindClusterCA, cn: APIServerCN,
				dns: apiserverDNS, ips: apiserverIPs, usages: serverUsage()}
		}
		if n.HasRole(model.RoleEtcd) {
			dns, ips := sans(n.Address, n.InternalAddress, n.Name, "127.0.0.1", "localhost")
			// Like kubeadm: etcd also dials itself with its serving
			// certificate (grpc-gateway), so it needs client auth too.
			out[NodeID(KindEtcdServer, n.Name)] = spec{ca: KindEtcdCA, cn: n.Name, dns: dns, ips: ips, usages: bothUsage()}
			out[NodeID(KindEtcdPeer, n.Name)] = spec{ca: KindEtcdCA, cn: n.Name, dns: dns, ips: ips, usages: bothUsage()}
		}
		// Every node runs a kubelet and kube-proxy.
		user := NodeUserPrefix + n.Name
		out[NodeID(KindKubelet, n.Name)] = spec{ca: KindClusterCA, cn: user, orgs: []string{NodesGroup}, usages: clientUsage()}
		out[NodeID(KindKubeletServing, n.Name)] = spec{ca: KindClusterCA, cn: user, orgs: []string{NodesGroup},
			dns: nodeDNS, ips: nodeIPs, usages: serverUsage()}
	}
	return out
}

// apiserverSANs are the SANs of every kube-apiserver certificate: every
// controlplane node's address, internal address and name, loopback, the
// kubernetes service's IP and names, and the extra SANs.
func apiserverSANs(in Input, serviceIP netip.Addr) ([]string, []netip.Addr) {
	values := []string{"127.0.0.1", "localhost", serviceIP.String(),
		"kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + in.ClusterDomain}
	for _, n := range in.Nodes {
		if n.HasRole(model.RoleControlPlane) {
			values = append(values, n.Address, n.InternalAddress, n.Name)
		}
	}
	return sans(append(values, in.ExtraSANs...)...)
}

// sans sorts values into DNS names and IP addresses, sorted and without
// duplicates, so that specs compare equal whatever the input order.
func sans(values ...string) ([]string, []netip.Addr) {
	var dns []string
	var ips []netip.Addr
	for _, v := range values {
		if ip, err := netip.ParseAddr(v); err == nil {
			ips = append(ips, ip.Unmap().WithZone(""))
		} else {
			dns = append(dns, v)
		}
	}
	slices.Sort(dns)
	slices.SortFunc(ips, netip.Addr.Compare)
	return slices.Compact(dns), slices.Compact(ips)
}
