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
	// ImagePause is the pod sandbox image the kubelet hands to the CRI.
	ImagePause = "pause"
	// ImageCoreDNS runs the cluster DNS.
	ImageCoreDNS = "coredns"
)

// ImageComponents returns the keys ClusterConfig.Images may hold, in the
// order messages name them. It returns a new slice on every call.
func ImageComponents() []string {
	return []string{ImageEtcd, ImageKubernetes, ImagePause, ImageCoreDNS}
}
