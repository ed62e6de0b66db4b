package model

// The components of ClusterConfig.Images: each key names one image zke
// runs, and zke's version table supplies the image of every key the
// config leaves out.
const (
	// ImageEtcd runs the etcd members.
	ImageEtcd = "etcd"
	// ImageKubernetes carries the Kubernetes binaries: kube-apiserver,
	// kube-controller-manager, kube-scheduler, kubelet and kube-proxy.
	ImageKubernetes = "kubernetes"
	// ImagePause names a pod sandbox image. It is accepted for
	// compatibility with existing cluster configs but has no effect: the
	// kubelet no longer hands a sandbox image to the CRI, whose own
	// setting (containerd's sandbox_image) decides.
	ImagePause = "pause"
	// ImageCoreDNS runs the cluster DNS.
	ImageCoreDNS = "coredns"
	// ImageLoadBalancer holds haproxy and keepalived, which run the
	// shared API endpoint of a cluster with a controlPlaneEndpoint.
	ImageLoadBalancer = "loadbalancer"
)

// ImageComponents returns the keys ClusterConfig.Images may hold, in the
// order messages name them. It returns a new slice on every call.
func ImageComponents() []string {
	return []string{ImageEtcd, ImageKubernetes, ImagePause, ImageCoreDNS, ImageLoadBalancer}
}
