package zke

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The objects a created cluster's data plane runs as, for the health
// checks of the cluster manager: CoreDNS's Deployment (addon_coredns.go)
// and flannel's DaemonSet (network_flannel.go).
const (
	CoreDNSNamespace  = metav1.NamespaceSystem
	CoreDNSDeployment = corednsName
	// CoreDNSSelector selects CoreDNS's pods.
	CoreDNSSelector  = "k8s-app=kube-dns"
	FlannelNamespace = flannelNamespace
	FlannelDaemonSet = flannelDaemonSet
	// PodRoutesBootAnnotation, on a worker's Node of a bridge cluster
	// whose routes an earlier release set, is the boot id (the kernel's,
	// which the kubelet reports as the Node's bootID) of the boot in
	// which it set the worker's pod routes and nat chain: nothing
	// restored them after a reboot, so a Node whose bootID differs has
	// lost them. The network step removes it once flanneld keeps the
	// routes (network_bridge_legacy.go).
	PodRoutesBootAnnotation = "zke.io/pod-routes-boot-id"
)
