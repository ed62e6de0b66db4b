package testbed

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
)

// The test images `make testbin` builds; hosts with a runtime have them
// loaded, so nothing is ever pulled. The images of upstream programs carry
// the names zke deploys by default (registry.k8s.io, kubeadm's tags:
// zke.DefaultImages; TestImagesCarryZkeDefaults checks them), so that a
// cluster on testbed hosts runs them without an images setting.
const (
	// KubeletImage is the image zke runs the kubelet's release binary in:
	// Docker's official Debian image, built from Debian's packages.
	KubeletImage = "debian:bookworm-slim"
	// KubeAPIServerImage, KubeControllerManagerImage and
	// KubeSchedulerImage hold their one binary in /usr/local/bin, no
	// shell, as upstream's distroless images do.
	KubeAPIServerImage         = "registry.k8s.io/kube-apiserver:" + KubeVersion
	KubeControllerManagerImage = "registry.k8s.io/kube-controller-manager:" + KubeVersion
	KubeSchedulerImage         = "registry.k8s.io/kube-scheduler:" + KubeVersion
	// KubeProxyImage holds kube-proxy and iptables.
	KubeProxyImage = "registry.k8s.io/kube-proxy:" + KubeVersion
	// EtcdImage holds etcd, etcdctl and etcdutl in /usr/local/bin.
	EtcdImage = "registry.k8s.io/etcd:3.7.0-0"
	// PauseImage is the pod sandbox image (also tagged with kubeadm's
	// pause of KubeVersion and PreviousKubeVersion, registry.k8s.io/pause:
	// 3.10.2, and containerd 1.6's default, :3.6).
	PauseImage = "singlecloud.test/pause:3.10"
	// BusyboxImage is a busybox for test pods and containers.
	BusyboxImage = "singlecloud.test/busybox:1"
	// CoreDNSImage is CoreDNS under the name and tag zke deploys by
	// default. Its archive also tags it PreviousCoreDNSImage.
	CoreDNSImage = "registry.k8s.io/coredns/coredns:v1.14.6"
	// HAProxyImage and KeepalivedImage run the shared API endpoint of
	// clusters with a controlPlaneEndpoint, under zke's default names
	// (Docker's official haproxy image, osixia's keepalived): Debian's
	// haproxy and keepalived in /usr/local/sbin, haproxy run as the user
	// haproxy as in the official image.
	HAProxyImage    = "haproxy:3.2.21"
	KeepalivedImage = "osixia/keepalived:2.3.4"
	// FlannelImage is flannel's, under the name and tag zke deploys
	// flannel (the VXLAN pod network) with: flanneld and install-conf in
	// /opt/bin, as upstream's image has them, the iptables KubeProxyImage
	// carries, and busybox's shell and tools (upstream's image has
	// Alpine's). The kubelet runs it in a DaemonSet's pods.
	FlannelImage = "ghcr.io/flannel-io/flannel:v0.28.10"
)

// The images of the release before (PreviousKubeVersion), for upgrade
// tests: the Kubernetes components' and etcd's (its own etcd 3.6 build,
// so that an upgrade moves etcd up a minor release), each an archive of
// its own (the kubelet's image is KubeletImage for both); CoreDNS and
// pause under the previous release's default names come with
// CoreDNSImage and PauseImage.
const (
	PreviousKubeAPIServerImage         = "registry.k8s.io/kube-apiserver:" + PreviousKubeVersion
	PreviousKubeControllerManagerImage = "registry.k8s.io/kube-controller-manager:" + PreviousKubeVersion
	PreviousKubeSchedulerImage         = "registry.k8s.io/kube-scheduler:" + PreviousKubeVersion
	PreviousKubeProxyImage             = "registry.k8s.io/kube-proxy:" + PreviousKubeVersion
	PreviousEtcdImage                  = "registry.k8s.io/etcd:3.6.8-0"
	PreviousCoreDNSImage               = "registry.k8s.io/coredns/coredns:v1.14.2"
)

// PreviousKubeVersion is the Kubernetes release before KubeVersion that
// the testbin also builds.
const PreviousKubeVersion = "v1.36.3"

// AllImages lists the test images hosts get by default (PreviousImages
// only when asked for: upgrade tests).
func AllImages() []string {
	return append(ClusterImages(), PauseImage, BusyboxImage, CoreDNSImage, HAProxyImage, KeepalivedImage, FlannelImage)
}

// ClusterImages lists the images zke runs in Docker on a cluster's
// nodes by default: the kubelet's, the Kubernetes components' and etcd's.
func ClusterImages() []string {
	return []string{KubeletImage, KubeAPIServerImage, KubeControllerManagerImage, KubeSchedulerImage, KubeProxyImage, EtcdImage}
}

// PreviousImages lists the previous release's images (its CoreDNS is
// CoreDNSImage's archive).
func PreviousImages() []string {
	return []string{PreviousKubeAPIServerImage, PreviousKubeControllerManagerImage,
		PreviousKubeSchedulerImage, PreviousKubeProxyImage, PreviousEtcdImage}
}

// ImageArchive returns the path of a test image's docker-archive in the
// testbin, as a cluster's imageArchive for the air-gapped path.
func ImageArchive(image string) (string, error) {
	testbin, err := Testbin()
	if err != nil {
		return "", err
	}
	return imageArchive(testbin, image)
}

// Archive names in the testbin's images/ directory (written by
// test/testbin/mkimage) that prereq.go checks for.
const (
	kubeletArchive = "kubelet.tar"
	pauseArchive   = "pause.tar"
	busyboxArchive = "busybox.tar"
	flannelArchive = "flannel.tar"
)

// imageArchives maps each test image to its archive in the testbin's
// images/ directory (written by test/testbin/mkimage).
func imageArchives() map[string]string {
	prev := "-" + PreviousKubeVersion + ".tar"
	return map[string]string{
		KubeletImage: kubeletArchive, KubeAPIServerImage: "kube-apiserver.tar",
		KubeControllerManagerImage: "kube-controller-manager.tar", KubeSchedulerImage: "kube-scheduler.tar",
		KubeProxyImage: "kube-proxy.tar", EtcdImage: "etcd.tar", PauseImage: pauseArchive, BusyboxImage: busyboxArchive,
		CoreDNSImage: "coredns.tar", HAProxyImage: "haproxy.tar", KeepalivedImage: "keepalived.tar", FlannelImage: flannelArchive,
		PreviousKubeAPIServerImage:         "kube-apiserver" + prev,
		PreviousKubeControllerManagerImage: "kube-controller-manager" + prev, PreviousKubeSchedulerImage: "kube-scheduler" + prev,
		PreviousKubeProxyImage: "kube-proxy" + prev, PreviousEtcdImage: "etcd" + prev,
	}
}

// imageArchive returns the docker-archive of a test image.
func imageArchive(testbin, image string) (string, error) {
	name := imageArchives()[image]
	if name == "" {
		return "", fmt.Errorf("%q is not a test image (use one of AllImages or PreviousImages)", image)
	}
	return filepath.Join(testbin, "images", name), nil
}

// loadImages loads the test images, containerd and dockerd at the same
// time. With Docker, dockerd gets Images (default all) but the pod-only
// images (CoreDNS, flannel), and containerd's k8s.io namespace, used only
// by a kubelet's pods, gets the pod images among them (podImage: busybox,
// CoreDNS, flannel); without Docker, containerd gets Images. Containerd always gets the pause image: its CRI cannot
// pull one.
func (g *hostGroup) loadImages(ctx context.Context, h *Host) error {
	images := g.opts.Images
	if images == nil {
		images = AllImages()
	}
	criImages := images
	if g.opts.Docker {
		criImages = nil
		for _, img := range images {
			if podImage(img) {
				criImages = append(criImages, img)
			}
		}
	}
	if !slices.Contains(criImages, PauseImage) {
		criImages = append(slices.Clone(criImages), PauseImage)
	}
	// Containerd 2's sandbox image (Containerd2SandboxImage) is a tag of
	// PauseImage's archive.
	var dockerImages []string
	if g.opts.Docker {
		for _, img := range images {
			if img != CoreDNSImage && img != FlannelImage {
				dockerImages = append(dockerImages, img)
			}
		}
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		errs[0] = g.importImages(ctx, criImages, "containerd", func(archive string) []string {
			return []string{h.Ctr, "--address", h.ContainerdSocket, "--namespace", "k8s.io", "images", "import", archive}
		})
	}()
	go func() {
		defer wg.Done()
		errs[1] = g.importImages(ctx, dockerImages, "docker", func(archive string) []string {
			return []string{"docker", "--host", "unix://" + h.DockerSocket, "load", "--quiet", "--input", archive}
		})
	}()
	wg.Wait()
	return errors.Join(errs...)
}

// podImage reports whether image runs in a kubelet's pods: containerd's
// k8s.io namespace gets it on hosts with Docker too.
func podImage(image string) bool {
	return image == BusyboxImage || image == CoreDNSImage || image == FlannelImage
}

// importImages runs the command that command builds for each image's
// archive, one after the other.
func (g *hostGroup) importImages(ctx context.Context, images []string, into string, command func(archive string) []string) error {
	for _, img := range images {
		archive, err := imageArchive(g.testbin, img)
		if err != nil {
			return err
		}
		argv := command(archive)
		if err := run(ctx, argv[0], argv[1:]...); err != nil {
			return fmt.Errorf("load %s into %s: %w", img, into, err)
		}
	}
	return nil
}

// run runs a program in the test's namespaces; a failure carries its
// output.
func run(ctx context.Context, program string, args ...string) error {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = hostEnv()
	cmd.WaitDelay = execWaitDelay
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", program, err, out)
	}
	return nil
}
