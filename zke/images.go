package zke

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// debianKubeletImage is the kubelet's image (see imageTable): Debian 12,
// whose support lasts into 2028, in the slim variant Docker publishes.
const debianKubeletImage = "debian:bookworm-slim"

// flannelImage is flannel's published image, which runs the pod network
// of both plugins on every release (flannel follows the Kubernetes
// API, not one release).
const flannelImage = "ghcr.io/flannel-io/flannel:v0.28.10"

// The shared API endpoint's images (endpoint.go), the two that Kubernetes'
// high-availability guide (kubeadm's ha-considerations) runs the
// keepalived + haproxy endpoint from: Docker's official haproxy image, on
// haproxy's 3.2 long-term-support line, and osixia's keepalived. Neither
// follows a Kubernetes release. zke runs each program by its name with its
// own arguments, not the images' entrypoints, so that any image holding
// haproxy or keepalived in its PATH works (the combined
// model.ImageLoadBalancer of earlier releases among them).
const (
	haproxyImage    = "haproxy:3.2.21"
	keepalivedImage = "osixia/keepalived:2.3.4"
)

// imageTable is the default image of each component per Kubernetes
// version: the images kubeadm deploys for that release, from
// registry.k8s.io (TestImageTableMatchesKubeadm reads kubeadm's source of
// each release and fails when a name or tag here differs), and the
// shared API endpoint's haproxy and keepalived (haproxyImage,
// keepalivedImage).
//
// The kubelet has no upstream image: upstream ships it as a release
// binary, which the artifacts step installs (kubelet_binary.go) and the
// kubelet's container mounts. Its image is only the root file system the
// binary runs in, with the mount(8) it runs for every pod's tmpfs
// volumes: Docker's official Debian image (debianKubeletImage).
//
// The pause entry is kubeadm's sandbox image, listed for completeness: the
// CRI's own setting decides the sandbox image (model.ImagePause).
var imageTable = map[string]map[string]string{
	"v1.35.4": {
		model.ImageKubeAPIServer:         "registry.k8s.io/kube-apiserver:v1.35.4",
		model.ImageKubeControllerManager: "registry.k8s.io/kube-controller-manager:v1.35.4",
		model.ImageKubeScheduler:         "registry.k8s.io/kube-scheduler:v1.35.4",
		model.ImageKubeProxy:             "registry.k8s.io/kube-proxy:v1.35.4",
		model.ImageKubelet:               debianKubeletImage,
		model.ImageEtcd:                  "registry.k8s.io/etcd:3.6.6-0",
		model.ImageCoreDNS:               "registry.k8s.io/coredns/coredns:v1.13.1",
		model.ImagePause:                 "registry.k8s.io/pause:3.10.1",
		model.ImageHAProxy:               haproxyImage,
		model.ImageKeepalived:            keepalivedImage,
		model.ImageFlannel:               flannelImage,
	},
	"v1.36.3": {
		model.ImageKubeAPIServer:         "registry.k8s.io/kube-apiserver:v1.36.3",
		model.ImageKubeControllerManager: "registry.k8s.io/kube-controller-manager:v1.36.3",
		model.ImageKubeScheduler:         "registry.k8s.io/kube-scheduler:v1.36.3",
		model.ImageKubeProxy:             "registry.k8s.io/kube-proxy:v1.36.3",
		model.ImageKubelet:               debianKubeletImage,
		model.ImageEtcd:                  "registry.k8s.io/etcd:3.6.8-0",
		model.ImageCoreDNS:               "registry.k8s.io/coredns/coredns:v1.14.2",
		model.ImagePause:                 "registry.k8s.io/pause:3.10.2",
		model.ImageHAProxy:               haproxyImage,
		model.ImageKeepalived:            keepalivedImage,
		model.ImageFlannel:               flannelImage,
	},
	"v1.37.2": {
		model.ImageKubeAPIServer:         "registry.k8s.io/kube-apiserver:v1.37.2",
		model.ImageKubeControllerManager: "registry.k8s.io/kube-controller-manager:v1.37.2",
		model.ImageKubeScheduler:         "registry.k8s.io/kube-scheduler:v1.37.2",
		model.ImageKubeProxy:             "registry.k8s.io/kube-proxy:v1.37.2",
		model.ImageKubelet:               debianKubeletImage,
		model.ImageEtcd:                  "registry.k8s.io/etcd:3.7.0-0",
		model.ImageCoreDNS:               "registry.k8s.io/coredns/coredns:v1.14.6",
		model.ImagePause:                 "registry.k8s.io/pause:3.10.2",
		model.ImageHAProxy:               haproxyImage,
		model.ImageKeepalived:            keepalivedImage,
		model.ImageFlannel:               flannelImage,
	},
}

// keptVersions are releases an earlier build installed and this one no
// longer creates clusters at: their images stay in imageTable so that a
// cluster created at one can still be updated (nodes added or removed,
// certificates rotated, restored), upgraded to the next minor release, and
// reverted to it when an upgrade fails. The testbin does not build them:
// what is tested is the upgrade from the oldest of KubernetesVersions.
var keptVersions = []string{"v1.35.4"}

// KubernetesVersions lists the Kubernetes releases this build of zke
// creates clusters at and upgrades to, sorted.
func KubernetesVersions() []string {
	var out []string
	for _, v := range slices.Sorted(maps.Keys(imageTable)) {
		if !slices.Contains(keptVersions, v) {
			out = append(out, v)
		}
	}
	return out
}

// KeptVersions lists the releases zke still runs for clusters created at
// them (keptVersions), sorted.
func KeptVersions() []string { return slices.Sorted(slices.Values(keptVersions)) }

// DefaultImages returns a copy of the default image of every component
// of Kubernetes version (keyed like ClusterConfig.Images), or nil for a
// version zke cannot install. The testbed names the images it builds
// after it, so that test clusters run them unasked.
func DefaultImages(version string) map[string]string {
	return maps.Clone(imageTable[version])
}

// runtimeSandboxImages are the sandbox images containerd 1.x runs pods in
// when its configuration names none (sandbox_image): 1.6's (Debian 12's
// and Ubuntu 22.04's package) and 1.7's. containerd 2.x defaults to
// kubeadm's pause of its release, which the image table carries.
var runtimeSandboxImages = []string{"registry.k8s.io/pause:3.6", "registry.k8s.io/pause:3.8"}

// RuntimeSandboxImages returns the sandbox images containerd 1.6 and 1.7
// use by default, under the names containerd asks for whatever the
// cluster's imageRepository: an image bundle carries them, so that an
// air-gapped node whose containerd runs as its package configures it
// finds the image every pod starts with.
func RuntimeSandboxImages() []string { return slices.Clone(runtimeSandboxImages) }

// imagesOf returns the image of every component: the config's own entry
// for it; else the config's entry for a combined image that stands for it
// (model.CombinedImages: a cluster created before the per-component keys
// existed keeps running what it ran); else the version table's default.
// The result has no combined key: every component is looked up by its
// own.
func imagesOf(cfg model.ClusterConfig) (map[string]string, error) {
	def, ok := imageTable[cfg.KubernetesVersion]
	if !ok {
		return nil, fmt.Errorf("kubernetesVersion %s is not supported; use one of %v", cfg.KubernetesVersion, KubernetesVersions())
	}
	out := maps.Clone(def)
	if repo := cfg.ImageRepository; repo != "" {
		for k, ref := range out {
			out[k] = inRepository(repo, ref)
		}
	}
	combined := model.CombinedImages()
	for key, components := range combined {
		if all := cfg.Images[key]; all != "" {
			for _, k := range components {
				out[k] = all
			}
		}
	}
	for k, v := range cfg.Images {
		if _, isCombined := combined[k]; !isCombined && v != "" {
			out[k] = v
		}
	}
	return out, nil
}

// upstreamRegistry is the registry of the default images an
// imageRepository replaces.
const upstreamRegistry = "registry.k8s.io/"

// inRepository is a default image ref moved to repo, as kubeadm's
// imageRepository moves it: registry.k8s.io/<name> becomes
// <repo>/<name>, but CoreDNS (registry.k8s.io/coredns/coredns) becomes
// <repo>/coredns, the layout of the mirrors users keep for kubeadm. An
// image from another registry stays where it is.
func inRepository(repo, ref string) string {
	name, ok := strings.CutPrefix(ref, upstreamRegistry)
	if !ok {
		return ref
	}
	name = strings.TrimPrefix(name, "coredns/")
	return repo + "/" + name
}
