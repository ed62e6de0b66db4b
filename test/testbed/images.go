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
// loaded, so nothing is ever pulled.
const (
	// KubernetesImage holds every Kubernetes component, etcd and etcdctl
	// in /usr/local/bin, and busybox as /bin/sh.
	KubernetesImage = "singlecloud.test/kubernetes:" + KubeVersion
	// PauseImage is the pod sandbox image (also tagged
	// registry.k8s.io/pause:3.10.2 and :3.6, the defaults of Kubernetes
	// 1.36 and containerd 1.6).
	PauseImage = "singlecloud.test/pause:3.10"
	// BusyboxImage is a busybox for test pods and containers.
	BusyboxImage = "singlecloud.test/busybox:1"
	// CoreDNSImage is CoreDNS under the name and tag zke deploys by
	// default.
	CoreDNSImage = "coredns/coredns:1.12.1"
	// KubeLBImage holds Debian's haproxy and keepalived, the shared API
	// endpoint of clusters with a controlPlaneEndpoint.
	KubeLBImage = "singlecloud.test/kube-lb:1"
	// PreviousKubernetesImage is KubernetesImage of the release before
	// (PreviousKubeVersion), for upgrade tests.
	PreviousKubernetesImage = "singlecloud.test/kubernetes:" + PreviousKubeVersion
)

// PreviousKubeVersion is the Kubernetes release before KubeVersion that
// the testbin also builds.
const PreviousKubeVersion = "v1.35.4"

// Archive names in the testbin's images/ directory (written by
// test/testbin/mkimage).
const (
	kubernetesArchive = "kubernetes.tar"
	pauseArchive      = "pause.tar"
	busyboxArchive    = "busybox.tar"
	corednsArchive    = "coredns.tar"
	kubeLBArchive     = "kube-lb.tar"
	previousArchive   = "kubernetes-" + PreviousKubeVersion + ".tar"
)

// AllImages lists the test images hosts get by default (PreviousKubernetesImage
// only when asked for: upgrade tests).
func AllImages() []string {
	return []string{KubernetesImage, PauseImage, BusyboxImage, CoreDNSImage, KubeLBImage}
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

// imageArchive returns the docker-archive of a test image.
func imageArchive(testbin, image string) (string, error) {
	name := map[string]string{KubernetesImage: kubernetesArchive, PauseImage: pauseArchive, BusyboxImage: busyboxArchive, CoreDNSImage: corednsArchive, KubeLBImage: kubeLBArchive,
		PreviousKubernetesImage: previousArchive}[image]
	if name == "" {
		return "", fmt.Errorf("%q is not a test image (use KubernetesImage, PauseImage, BusyboxImage or CoreDNSImage)", image)
	}
	return filepath.Join(testbin, "images", name), nil
}

// loadImages loads the test images, containerd and dockerd at the same
// time. With Docker, dockerd gets Images (default all) but CoreDNS, and
// containerd's k8s.io namespace, used only by a kubelet's pods, gets the
// pod images among them (busybox, CoreDNS); without Docker, containerd
// gets Images. Containerd always gets the pause image: its CRI cannot
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
			if img == BusyboxImage || img == CoreDNSImage {
				criImages = append(criImages, img)
			}
		}
	}
	if !slices.Contains(criImages, PauseImage) {
		criImages = append(slices.Clone(criImages), PauseImage)
	}
	var dockerImages []string
	if g.opts.Docker {
		for _, img := range images {
			if img != CoreDNSImage {
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
			return []string{"ctr", "--address", h.ContainerdSocket, "--namespace", "k8s.io", "images", "import", archive}
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
