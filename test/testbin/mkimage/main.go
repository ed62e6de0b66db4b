// Command mkimage writes the testbed's container images as docker-archive
// tars (manifest.json + config + one uncompressed layer), the form that both
// `docker load` (Docker 20.10 cannot load OCI-only tars) and
// `ctr -n k8s.io images import` accept. No registry and no Docker daemon are
// needed, and the output is byte-for-byte reproducible: every timestamp,
// owner and ordering in the archives is fixed.
//
//	mkimage -bin DIR -out DIR -debian-rootfs FILE -kube-version v1.37.2 [-iptables-dir /usr/sbin -xtables-dir DIR -lb-dir /usr/sbin]
//	        [-previous-bin DIR -previous-version v1.36.3]
//
// DIR given by -bin must hold the static binaries built by `make testbin`:
// kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
// kube-proxy, etcd, etcdctl, etcdutl, coredns, flanneld, install-conf,
// pause and a static busybox.
//
// The images carry the names zke deploys by default (zke.DefaultImages:
// registry.k8s.io and kubeadm's tags), so that clusters on testbed hosts
// run them unasked: one image per Kubernetes component (componentImages),
// etcd, CoreDNS and pause. The kubelet, which upstream ships as a binary
// and not an image, runs (its binary mounted in by zke) in Docker's
// official debian:bookworm-slim, built here as it is upstream, from
// Debian's packages (-debian-rootfs: mmdebstrap's minbase tar). The
// kube-proxy image holds this machine's iptables (Debian's package: the
// xtables multi-call binaries, their extension modules and shared
// libraries). The shared API endpoint's images, haproxy's and
// keepalived's, hold Debian's builds of them (loadbalancer.go). Flannel's image
// (ghcr.io/flannel-io/flannel) holds flanneld in /opt/bin, the
// kube-proxy image's iptables and busybox. With -previous-bin, the previous
// release's Kubernetes and etcd images are written too (name-<version>.tar,
// from the binaries there), and the CoreDNS and pause images also carry
// its tags.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Archive file names inside -out; test/testbed loads them by these names.
const (
	kubeletArchive = "kubelet.tar"
	pauseArchive   = "pause.tar"
	busyboxArchive = "busybox.tar"
	corednsArchive = "coredns.tar"
)

// kubeletTag is the image the kubelet's release binary runs in: zke's
// default (zke.DefaultImages), Docker's official Debian image, which this
// testbin builds the way it is built, from Debian's packages.
const kubeletTag = "debian:bookworm-slim"

// pauseTags are the pause image's names: containerd 1.6 is configured
// with the first as its sandbox image; the others are zke's (kubeadm's)
// pause of each release, containerd 1.6's default and containerd 2.4.2's
// (its CRI's pinned sandbox image, which testbed hosts on containerd 2
// keep), tagged too so that nothing ever tries to pull a sandbox image on
// this offline machine.
func pauseTags(versions []string) ([]string, error) {
	tags, err := defaultTags(model.ImagePause, versions)
	if err != nil {
		return nil, err
	}
	tags = append(append([]string{"singlecloud.test/pause:3.10"}, tags...), "registry.k8s.io/pause:3.6")
	if !slices.Contains(tags, containerd2Pause) {
		tags = append(tags, containerd2Pause)
	}
	return tags, nil
}

// containerd2Pause is containerd v2.4.2's default sandbox image
// (DefaultSandboxImage of its internal/cri/config).
const containerd2Pause = "registry.k8s.io/pause:3.10.2"

const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// options are mkimage's flags.
type options struct {
	bin, out, kubeVersion, iptablesDir, xtablesDir, lbDir, previousBin, previousVersion, debianRootfs string
}

func run() error {
	var o options
	flag.StringVar(&o.bin, "bin", "", "directory holding the static binaries (required)")
	flag.StringVar(&o.out, "out", "", "directory to write the image archives into (required)")
	flag.StringVar(&o.kubeVersion, "kube-version", "v1.37.2", "the Kubernetes release of the binaries in -bin")
	flag.StringVar(&o.iptablesDir, "iptables-dir", "/usr/sbin", "directory holding xtables-nft-multi and/or xtables-legacy-multi")
	flag.StringVar(&o.xtablesDir, "xtables-dir", "/usr/lib/x86_64-linux-gnu/xtables", "directory holding the iptables extension modules")
	flag.StringVar(&o.lbDir, "lb-dir", "/usr/sbin", "directory holding Debian's haproxy and keepalived")
	flag.StringVar(&o.previousBin, "previous-bin", "", "directory holding the Kubernetes and etcd binaries of the previous release (optional)")
	flag.StringVar(&o.previousVersion, "previous-version", "", "the previous Kubernetes release, of the binaries in -previous-bin")
	flag.StringVar(&o.debianRootfs, "debian-rootfs", "", "a Debian bookworm minbase root file system as a tar (mmdebstrap's), the kubelet's image (required)")
	flag.Parse()
	if o.bin == "" || o.out == "" || o.debianRootfs == "" {
		return fmt.Errorf("-bin, -out and -debian-rootfs are required")
	}
	if o.previousBin != "" && o.previousVersion == "" {
		return fmt.Errorf("-previous-bin needs -previous-version")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	images, err := allImages(o)
	if err != nil {
		return err
	}
	for _, img := range images {
		if err := img.write(filepath.Join(o.out, img.file)); err != nil {
			return fmt.Errorf("image %s: %w", img.tags[0], err)
		}
		fmt.Printf("mkimage: wrote %s (%s)\n", filepath.Join(o.out, img.file), img.tags[0])
	}
	return nil
}

// allImages is every image mkimage writes.
func allImages(o options) ([]image, error) {
	applets, err := busyboxApplets(filepath.Join(o.bin, "busybox"))
	if err != nil {
		return nil, err
	}
	iptables, err := iptablesRoot(o.iptablesDir, o.xtablesDir)
	if err != nil {
		return nil, err
	}
	versions := []string{o.kubeVersion}
	if o.previousBin != "" {
		versions = append(versions, o.previousVersion)
	}
	var images []image
	for i, v := range versions {
		kubeBin := map[bool]string{false: o.bin, true: o.previousBin}[i > 0]
		components, err := componentImages(kubeBin, v, i > 0, iptables)
		if err != nil {
			return nil, err
		}
		etcd, err := etcdImage(kubeBin, v, i > 0)
		if err != nil {
			return nil, err
		}
		images = append(append(images, components...), etcd)
	}
	images = append(images, image{file: kubeletArchive, tags: []string{kubeletTag}, cmd: []string{"bash"}, rootTar: o.debianRootfs})
	shared, err := sharedImages(o, versions, applets)
	if err != nil {
		return nil, err
	}
	flannel, err := flannelImage(o.bin, applets, iptables, versions)
	if err != nil {
		return nil, err
	}
	return append(append(images, shared...), flannel), nil
}

// sharedImages are the images both releases use, tagged for each: CoreDNS
// and pause under zke's default names, busybox and the load balancer's
// haproxy and keepalived.
func sharedImages(o options, versions []string, applets []string) ([]image, error) {
	corednsTags, err := defaultTags(model.ImageCoreDNS, versions)
	if err != nil {
		return nil, err
	}
	pause, err := pauseTags(versions)
	if err != nil {
		return nil, err
	}
	lb, err := loadBalancerImages(o.lbDir, versions, baseRoot(o.bin, applets))
	if err != nil {
		return nil, err
	}
	return append([]image{
		{file: busyboxArchive, tags: []string{"singlecloud.test/busybox:1"}, cmd: []string{"sh"}, root: baseRoot(o.bin, applets)},
		// CoreDNS is test/testbin/coredns/go.mod's, v1.14.6, the current
		// release's tag; the previous release's (v1.14.2) names the same build.
		{
			file: corednsArchive, tags: corednsTags, entrypoint: []string{"/coredns"},
			root: append(distrolessRoot(), file("coredns", 0o755, filepath.Join(o.bin, "coredns"))),
		},
		{
			file: pauseArchive, tags: pause, entrypoint: []string{"/pause"},
			root: []entry{
				dir("etc", 0o755),
				data("etc/passwd", 0o644, passwd),
				data("etc/group", 0o644, group),
				file("pause", 0o755, filepath.Join(o.bin, "pause")),
			},
		},
	}, lb...), nil
}

const passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
const group = "root:x:0:\nnogroup:x:65534:\n"
const nsswitch = "hosts: files dns\n"

// baseRoot is a minimal Unix tree with busybox: a shell and the usual tools
// under /bin, a passwd, and writable /tmp.
func baseRoot(bin string, applets []string) []entry {
	root := []entry{
		dir("bin", 0o755),
		dir("etc", 0o755),
		dir("root", 0o700),
		dir("tmp", 0o1777),
		dir("usr", 0o755),
		dir("usr/bin", 0o755),
		dir("var", 0o755),
		dir("var/lib", 0o755),
		dir("var/log", 0o755),
		data("etc/passwd", 0o644, passwd),
		data("etc/group", 0o644, group),
		data("etc/nsswitch.conf", 0o644, nsswitch),
		file("bin/busybox", 0o755, filepath.Join(bin, "busybox")),
		symlink("usr/bin/env", "/bin/busybox"),
	}
	for _, a := range applets {
		if a != "busybox" {
			root = append(root, symlink("bin/"+a, "busybox"))
		}
	}
	return root
}
