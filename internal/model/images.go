package model

// The components of ClusterConfig.Images: each key names one image zke
// runs, and zke's version table supplies the image of every key the
// config leaves out.
const (
	// ImageEtcd runs the etcd members (etcd and etcdctl in its PATH).
	ImageEtcd = "etcd"
	// ImageKubeAPIServer runs kube-apiserver.
	ImageKubeAPIServer = "kube-apiserver"
	// ImageKubeControllerManager runs kube-controller-manager.
	ImageKubeControllerManager = "kube-controller-manager"
	// ImageKubeScheduler runs kube-scheduler.
	ImageKubeScheduler = "kube-scheduler"
	// ImageKubeProxy runs kube-proxy (with the iptables it programs).
	ImageKubeProxy = "kube-proxy"
	// ImageKubelet runs the kubelet.
	ImageKubelet = "kubelet"
	// ImageKubernetes is the all-in-one image of earlier releases, which
	// carried every Kubernetes binary. It is still accepted, so that
	// stored clusters keep working: when set, it runs every Kubernetes
	// component (KubernetesImageComponents) the config gives no image of
	// its own.
	ImageKubernetes = "kubernetes"
	// ImagePause names a pod sandbox image. It is accepted for
	// compatibility with existing cluster configs but has no effect: the
	// kubelet no longer hands a sandbox image to the CRI, whose own
	// setting (containerd's sandbox_image) decides.
	ImagePause = "pause"
	// ImageCoreDNS runs the cluster DNS.
	ImageCoreDNS = "coredns"
	// ImageHAProxy runs haproxy, the load balancer in front of every
	// kube-apiserver behind a cluster's controlPlaneEndpoint.
	ImageHAProxy = "haproxy"
	// ImageKeepalived runs keepalived, which holds the
	// controlPlaneEndpoint's virtual IP on one control-plane node.
	ImageKeepalived = "keepalived"
	// ImageLoadBalancer is the image of earlier releases that held both
	// haproxy and keepalived. It is still accepted, so that stored
	// clusters keep working: when set, it runs each of
	// LoadBalancerImageComponents the config gives no image of its own.
	ImageLoadBalancer = "loadbalancer"
	// ImageFlannel runs flanneld, which runs both pod networks
	// (PluginFlannel and PluginBridge).
	ImageFlannel = "flannel"
)

// ImageComponents returns the keys ClusterConfig.Images may hold, in the
// order messages name them. It returns a new slice on every call.
func ImageComponents() []string {
	return []string{ImageEtcd, ImageKubeAPIServer, ImageKubeControllerManager, ImageKubeScheduler, ImageKubeProxy,
		ImageKubelet, ImageKubernetes, ImagePause, ImageCoreDNS, ImageHAProxy, ImageKeepalived, ImageLoadBalancer, ImageFlannel}
}

// CombinedImages maps each key of an image that earlier releases ran
// several components from (ImageKubernetes, ImageLoadBalancer) to those
// components: a config entry under such a key stands for every one of
// them the config names no image of its own for. It returns a new map on
// every call.
func CombinedImages() map[string][]string {
	return map[string][]string{
		ImageKubernetes:   KubernetesImageComponents(),
		ImageLoadBalancer: LoadBalancerImageComponents(),
	}
}

// LoadBalancerImageComponents returns the keys the combined
// ImageLoadBalancer stands for. It returns a new slice on every call.
func LoadBalancerImageComponents() []string { return []string{ImageHAProxy, ImageKeepalived} }

// KubernetesImageComponents returns the keys the all-in-one
// ImageKubernetes stands for: the components built from the Kubernetes
// repository. It returns a new slice on every call.
func KubernetesImageComponents() []string {
	return []string{ImageKubeAPIServer, ImageKubeControllerManager, ImageKubeScheduler, ImageKubeProxy, ImageKubelet}
}
