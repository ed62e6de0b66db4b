package testbed

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
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
)

// Archive names in the testbin's images/ directory (written by
// test/testbin/mkimage).
const (
	kubernetesArchive = "kubernetes.tar"
	pauseArchive      = "pause.tar"
	busyboxArchive    = "busybox.tar"
)

// AllImages lists every test image.
func AllImages() []string { return []string{KubernetesImage, PauseImage, BusyboxImage} }

// imageArchive returns the docker-archive of a test image.
func imageArchive(testbin, image string) (string, error) {
	name := map[string]string{KubernetesImage: kubernetesArchive, PauseImage: pauseArchive, BusyboxImage: busyboxArchive}[image]
	if name == "" {
		return "", fmt.Errorf("%q is not a test image (use KubernetesImage, PauseImage or BusyboxImage)", image)
	}
	return filepath.Join(testbin, "images", name), nil
}

// loadImages imports the asked-for images into containerd's k8s.io
// namespace (the pause image always: the CRI cannot pull it) and into
// dockerd.
func (g *hostGroup) loadImages(ctx context.Context, h *Host) error {
	if g.opts.NoImages || !g.opts.Containerd {
		return nil
	}
	images := g.opts.Images
	if images == nil {
		images = AllImages()
	}
	criImages := images
	if !slices.Contains(criImages, PauseImage) {
		criImages = append(slices.Clone(images), PauseImage)
	}
	for _, img := range criImages {
		archive, err := imageArchive(g.testbin, img)
		if err != nil {
			return err
		}
		if err := run(ctx, "ctr", "--address", h.ContainerdSocket, "--namespace", "k8s.io", "images", "import", archive); err != nil {
			return fmt.Errorf("load %s into containerd: %w", img, err)
		}
	}
	if !g.opts.Docker {
		return nil
	}
	for _, img := range images {
		archive, err := imageArchive(g.testbin, img)
		if err != nil {
			return err
		}
		if err := run(ctx, "docker", "--host", "unix://"+h.DockerSocket, "load", "--quiet", "--input", archive); err != nil {
			return fmt.Errorf("load %s into docker: %w", img, err)
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
