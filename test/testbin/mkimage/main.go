// Command mkimage writes the testbed's container images as docker-archive
// tars (manifest.json + config + one uncompressed layer), the form that both
// `docker load` (Docker 20.10 cannot load OCI-only tars) and
// `ctr -n k8s.io images import` accept. No registry and no Docker daemon are
// needed, and the output is byte-for-byte reproducible: every timestamp,
// owner and ordering in the archives is fixed.
//
//	mkimage -bin DIR -out DIR -kube-version v1.36.3 [-iptables-dir /usr/sbin -xtables-dir DIR -lb-dir /usr/sbin]
//
// DIR given by -bin must hold the static binaries built by `make testbin`:
// kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
// kube-proxy, etcd, etcdctl, coredns, pause and a static busybox. The kubernetes
// image also gets this machine's iptables (Debian's package: the xtables
// multi-call binaries, their extension modules and shared libraries), which
// kube-proxy and the kubelet run. The kube-lb image holds Debian's haproxy
// and keepalived, the control plane's shared endpoint.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Archive file names inside -out; test/testbed loads them by these names.
const (
	kubernetesArchive = "kubernetes.tar"
	pauseArchive      = "pause.tar"
	busyboxArchive    = "busybox.tar"
	corednsArchive    = "coredns.tar"
	kubeLBArchive     = "kube-lb.tar"
)

// kubeLBTag is the load-balancer image (haproxy and keepalived).
const kubeLBTag = "singlecloud.test/kube-lb:1"

// corednsTag is the CoreDNS image: the name and tag zke's image table
// defaults to, so that clusters on testbed hosts use it unasked.
const corednsTag = "coredns/coredns:1.12.1"

// Pause image names. Containerd is configured with the first as its
// sandbox image; the others are the defaults of Kubernetes 1.36
// (kubeadm's PauseVersion) and of containerd 1.6, tagged too so that nothing
// ever tries to pull a sandbox image on this offline machine.
func pauseTags() []string {
	return []string{"singlecloud.test/pause:3.10", "registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.6"}
}

// kubeBinaries go to /usr/local/bin of the kubernetes image.
func kubeBinaries() []string {
	return []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "etcd", "etcdctl"}
}

const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run() error {
	bin := flag.String("bin", "", "directory holding the static binaries (required)")
	out := flag.String("out", "", "directory to write the image archives into (required)")
	kubeVersion := flag.String("kube-version", "v1.36.3", "tag of singlecloud.test/kubernetes")
	iptablesDir := flag.String("iptables-dir", "/usr/sbin", "directory holding xtables-nft-multi and/or xtables-legacy-multi")
	xtablesDir := flag.String("xtables-dir", "/usr/lib/x86_64-linux-gnu/xtables", "directory holding the iptables extension modules")
	lbDir := flag.String("lb-dir", "/usr/sbin", "directory holding Debian's haproxy and keepalived")
	previousBin := flag.String("previous-bin", "", "directory holding the Kubernetes binaries of the previous release (optional)")
	previousVersion := flag.String("previous-version", "", "tag of the previous release's singlecloud.test/kubernetes image")
	flag.Parse()
	if *bin == "" || *out == "" {
		return fmt.Errorf("both -bin and -out are required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	applets, err := busyboxApplets(filepath.Join(*bin, "busybox"))
	if err != nil {
		return err
	}
	iptables, err := iptablesRoot(*iptablesDir, *xtablesDir)
	if err != nil {
		return err
	}
	kubeTree, err := completeTree(append(append(baseRoot(*bin, applets), kubeRoot(*bin)...), iptables...))
	if err != nil {
		return fmt.Errorf("image singlecloud.test/kubernetes: %w", err)
	}
	lb, err := loadBalancerRoot(*lbDir)
	if err != nil {
		return err
	}
	lbTree, err := completeTree(append(baseRoot(*bin, applets), lb...))
	if err != nil {
		return fmt.Errorf("image %s: %w", kubeLBTag, err)
	}

	images := []image{}
	if *previousBin != "" {
		// The previous release: its own Kubernetes binaries, the same
		// etcd, busybox and iptables.
		root := append(append(baseRoot(*bin, applets), kubeRootFrom(*previousBin, *bin)...), iptables...)
		tree, err := completeTree(root)
		if err != nil {
			return fmt.Errorf("image singlecloud.test/kubernetes:%s: %w", *previousVersion, err)
		}
		images = append(images, image{
			file: "kubernetes-" + *previousVersion + ".tar",
			tags: []string{"singlecloud.test/kubernetes:" + *previousVersion},
			cmd:  []string{"sh"},
			root: tree,
		})
	}
	images = append(images, []image{
		{
			file: busyboxArchive,
			tags: []string{"singlecloud.test/busybox:1"},
			cmd:  []string{"sh"},
			root: baseRoot(*bin, applets),
		},
		{
			file:       corednsArchive,
			tags:       []string{corednsTag},
			entrypoint: []string{"/coredns"},
			root: []entry{
				dir("etc", 0o755),
				data("etc/passwd", 0o644, passwd),
				data("etc/group", 0o644, group),
				dir("tmp", 0o1777),
				file("coredns", 0o755, filepath.Join(*bin, "coredns")),
			},
		},
		{
			file:       pauseArchive,
			tags:       pauseTags(),
			entrypoint: []string{"/pause"},
			root: []entry{
				dir("etc", 0o755),
				data("etc/passwd", 0o644, passwd),
				data("etc/group", 0o644, group),
				file("pause", 0o755, filepath.Join(*bin, "pause")),
			},
		},
		{
			file: kubeLBArchive,
			tags: []string{kubeLBTag},
			cmd:  []string{"sh"},
			root: lbTree,
		},
		{
			file: kubernetesArchive,
			tags: []string{"singlecloud.test/kubernetes:" + *kubeVersion},
			cmd:  []string{"sh"},
			root: kubeTree,
		},
	}...)
	for _, img := range images {
		if err := img.write(filepath.Join(*out, img.file)); err != nil {
			return fmt.Errorf("image %s: %w", img.tags[0], err)
		}
		fmt.Printf("mkimage: wrote %s (%s)\n", filepath.Join(*out, img.file), img.tags[0])
	}
	return nil
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

// kubeRoot adds every Kubernetes component and etcd under /usr/local/bin,
// and /run, where iptables -w takes its lock (/run/xtables.lock) when no
// host /run is mounted.
func kubeRoot(bin string) []entry { return kubeRootFrom(bin, bin) }

// kubeRootFrom is kubeRoot with the Kubernetes components from kubeBin
// and etcd and etcdctl from bin.
func kubeRootFrom(kubeBin, bin string) []entry {
	root := []entry{dir("run", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755)}
	for _, b := range kubeBinaries() {
		src := filepath.Join(kubeBin, b)
		if b == "etcd" || b == "etcdctl" {
			src = filepath.Join(bin, b)
		}
		root = append(root, file("usr/local/bin/"+b, 0o755, src))
	}
	return root
}
