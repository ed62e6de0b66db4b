package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke"
)

// componentBinaries are the programs built from the Kubernetes repository
// that each get an image of their own, by their ClusterConfig.Images key.
// The kubelet is not among them: it runs from the all-in-one
// singlecloud.test/kubernetes image (kubeletRoot).
func componentBinaries() map[string]string {
	return map[string]string{
		model.ImageKubeAPIServer:         "kube-apiserver",
		model.ImageKubeControllerManager: "kube-controller-manager",
		model.ImageKubeScheduler:         "kube-scheduler",
		model.ImageKubeProxy:             "kube-proxy",
	}
}

// archiveName is the archive of image name (kube-apiserver, kubernetes)
// of release version: name.tar for the current one, name-version.tar for
// the previous one.
func archiveName(name, version string, previous bool) string {
	if previous {
		return name + "-" + version + ".tar"
	}
	return name + ".tar"
}

// defaultImages is zke's default image of every component of version:
// the names these images carry, so that clusters on testbed hosts run
// them without an images setting.
func defaultImages(version string) (map[string]string, error) {
	d := zke.DefaultImages(version)
	if d == nil {
		return nil, fmt.Errorf("zke has no default images for Kubernetes %s (it installs %v)", version, zke.KubernetesVersions())
	}
	return d, nil
}

// componentImages are release version's images of the Kubernetes
// components, named as upstream publishes them (our builds of upstream
// programs carry upstream names): kube-apiserver, kube-controller-manager
// and kube-scheduler hold only their binary in /usr/local/bin, as the
// distroless upstream images do (no shell); kube-proxy also holds
// iptables, which it runs. kubeBin holds the release's binaries.
func componentImages(kubeBin, version string, previous bool, iptables []entry) ([]image, error) {
	defaults, err := defaultImages(version)
	if err != nil {
		return nil, err
	}
	var out []image
	for _, key := range slices.Sorted(maps.Keys(componentBinaries())) {
		name := componentBinaries()[key]
		root := append(distrolessRoot(), file("usr/local/bin/"+name, 0o755, filepath.Join(kubeBin, name)))
		if key == model.ImageKubeProxy {
			// /run is where iptables -w takes its lock when no host
			// /run is mounted.
			root = append(append(root, dir("run", 0o755)), iptables...)
		}
		tree, err := completeTree(root)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", defaults[key], err)
		}
		out = append(out, image{file: archiveName(name, version, previous), tags: []string{defaults[key]}, entrypoint: []string{"/usr/local/bin/" + name}, root: tree})
	}
	return out, nil
}

// etcdImage holds etcd, etcdctl and etcdutl of bin in /usr/local/bin, as
// upstream's image does, tagged as zke's default etcd image of version
// (kubeadm's etcd tag). The current release's is test/testbin/etcd/go.mod's
// (3.7.0); the previous release's, test/testbin/etcd-v3.6.8's, in its own
// archive, so that an upgrade moves etcd up a minor release and a revert
// takes it down, as on a real cluster.
func etcdImage(bin, version string, previous bool) (image, error) {
	tags, err := defaultTags(model.ImageEtcd, []string{version})
	if err != nil {
		return image{}, err
	}
	root := append(distrolessRoot(), dir("var/lib/etcd", 0o700),
		file("usr/local/bin/etcd", 0o755, filepath.Join(bin, "etcd")),
		file("usr/local/bin/etcdctl", 0o755, filepath.Join(bin, "etcdctl")),
		file("usr/local/bin/etcdutl", 0o755, filepath.Join(bin, "etcdutl")))
	tree, err := completeTree(root)
	if err != nil {
		return image{}, fmt.Errorf("image %s: %w", tags[0], err)
	}
	return image{file: archiveName("etcd", version, previous), tags: tags, entrypoint: []string{"/usr/local/bin/etcd"}, root: tree}, nil
}

// defaultTags is zke's default image of component key in each of
// versions, without repeats, in versions' order.
func defaultTags(key string, versions []string) ([]string, error) {
	var tags []string
	for _, v := range versions {
		d, err := defaultImages(v)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(tags, d[key]) {
			tags = append(tags, d[key])
		}
	}
	return tags, nil
}

// distrolessRoot is what a distroless image holds besides its program:
// the passwd and group files, nsswitch.conf (Go's resolver reads it) and
// a writable /tmp; no shell.
func distrolessRoot() []entry {
	return []entry{
		dir("etc", 0o755),
		data("etc/passwd", 0o644, passwd),
		data("etc/group", 0o644, group),
		data("etc/nsswitch.conf", 0o644, nsswitch),
		dir("tmp", 0o1777),
	}
}

// flannelArchive is the flannel image's archive inside -out; test/testbed
// loads it by this name.
const flannelArchive = "flannel.tar"

// flannelImage is flannel's published image under zke's default name of
// each release in versions (ghcr.io/flannel-io/flannel:v0.28.10, the
// version test/testbin/flannel/go.mod builds, for all of them): flanneld
// and install-conf in /opt/bin, as upstream's image has them, with the iptables of the kube-proxy image (flanneld runs
// iptables, iptables-save and iptables-restore, and ip6tables for IPv6),
// the directories flanneld reads and writes (/run/flannel for
// subnet.env, /etc/kube-flannel for net-conf.json, /run for the xtables
// lock), and busybox's shell and tools, as upstream's Alpine-based image
// has a shell.
func flannelImage(bin string, applets []string, iptables []entry, versions []string) (image, error) {
	tags, err := defaultTags(model.ImageFlannel, versions)
	if err != nil {
		return image{}, err
	}
	root := append(baseRoot(bin, applets),
		dir("opt", 0o755), dir("opt/bin", 0o755),
		file("opt/bin/flanneld", 0o755, filepath.Join(bin, "flanneld")),
		file("opt/bin/install-conf", 0o755, filepath.Join(bin, "install-conf")),
		dir("run", 0o755), dir("run/flannel", 0o755), dir("etc/kube-flannel", 0o755))
	tree, err := completeTree(append(root, iptables...))
	if err != nil {
		return image{}, fmt.Errorf("image %s: %w", tags[0], err)
	}
	return image{file: flannelArchive, tags: tags, entrypoint: []string{"/opt/bin/flanneld"}, root: tree}, nil
}
