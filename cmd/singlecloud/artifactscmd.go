package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/artifacts"
)

const artifactsSynopsis = `Usage: singlecloud artifacts list [--version V] [--image-repository REPO] [--arch amd64,arm64]
       singlecloud artifacts fetch --dir DIR [--version V] [--arch amd64,arm64] [--artifact-mirror URL]
       singlecloud artifacts bundle --dir DIR [--version V] [--arch amd64,arm64] [--image-repository REPO]
              [--load-balancer] [--registry-mirror REGISTRY=MIRROR]...
              [--artifact-mirror URL]

list prints what a cluster at Kubernetes version V needs from outside: every image
its nodes run (with a cluster's imageRepository applied, when given) and every
release file zke installs (the kubelet, the CNI plugins) with the address of its
published SHA-256. Mirror these for an installation without internet access.

fetch downloads those release files into DIR, each verified against its published
SHA-256 (a mismatch names the file and both sums, and keeps nothing), laid out as
<DIR>/<host>/<path> of its upstream address with its .sha256 beside it: the layout
of an artifact mirror. Serve DIR over HTTP and give its address as a cluster's
artifactMirror or the server's --artifact-mirror, or copy it into the server's
--artifact-dir, where the artifacts step finds the files without downloading.

bundle writes everything an installation without internet access needs for
version V into DIR: the release files, as fetch does, and, for each
architecture, every image the nodes run pulled into one docker-archive,
DIR/images-V-linux-ARCH.tar, under the names a cluster asks for (its
imageRepository applied), with DIR/images-V-linux-ARCH.txt listing each image
and the digest pulled. Without --image-repository it also holds containerd
1.6's and 1.7's default sandbox images (registry.k8s.io/pause:3.6 and :3.8),
which a node whose containerd runs as its package configures starts every
pod with; a node of a private repository names its own (sandbox_image).
Copy the archive into the server's --image-dir and name
it as the cluster's imageArchive. The shared endpoint's haproxy and keepalived
images are included with --load-balancer (clusters with a
controlPlaneEndpoint); flannel's always (it runs both pod networks:
--network-plugin is accepted, and ignored, for scripts of earlier releases).
--registry-mirror pulls a registry's images from a
mirror of it (registry.k8s.io=mirror.local:5000/k8s; http://host:port for a
registry served over plain HTTP), repeatable; docker login's credentials are
used.
`

// runArtifacts runs `singlecloud artifacts list|fetch`.
func runArtifacts(ctx context.Context, args []string, s cmdStreams) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "fetch" && args[0] != "bundle") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(s.out, artifactsSynopsis)
			return flag.ErrHelp
		}
		return usageErr{errors.New("give list, fetch or bundle (see --help)")}
	}
	fs := flag.NewFlagSet("artifacts "+args[0], flag.ContinueOnError)
	versions := zke.KubernetesVersions()
	version := fs.String("version", versions[len(versions)-1], "the Kubernetes release, one of "+strings.Join(versions, ", "))
	archList := fs.String("arch", "amd64", "the nodes' architectures, comma-separated: "+strings.Join(zke.ReleaseArchs(), ", "))
	repo := fs.String("image-repository", "", "a registry and path replacing registry.k8s.io, as a cluster's imageRepository (list)")
	dir := fs.String("dir", "", "the directory to fetch into, laid out as a mirror (fetch)")
	mirror := fs.String("artifact-mirror", "", "fetch from this mirror instead of the upstream addresses (fetch, bundle)")
	var b bundleOptions
	b.flags(fs)
	if err := parseFlags(fs, args[1:], s, artifactsSynopsis); err != nil {
		return err
	}
	var files []artifacts.File
	for _, arch := range strings.Split(*archList, ",") {
		fs, err := zke.ReleaseFiles(*version, strings.TrimSpace(arch))
		if err != nil {
			return usageErr{err}
		}
		files = append(files, fs...)
	}
	if args[0] == "list" {
		return listArtifacts(s, *version, *repo, files)
	}
	if *dir == "" {
		return usageErr{errors.New("dir: give the directory to fetch into")}
	}
	if err := validation.ArtifactMirror(*mirror); err != nil {
		return usageErr{fmt.Errorf("artifact-mirror: %w", err)}
	}
	if args[0] == "bundle" {
		b.dir, b.version, b.repo, b.archs = *dir, *version, *repo, strings.Split(*archList, ",")
		if err := bundleImages(ctx, s, b); err != nil {
			return err
		}
	}
	return fetchArtifacts(ctx, s, *dir, *mirror, files)
}

// listArtifacts prints the images and release files of version.
func listArtifacts(s cmdStreams, version, repo string, files []artifacts.File) error {
	c := model.ClusterConfig{ImageRepository: repo}
	c.ApplyDefaults()
	if err := validation.ImageRepository(c.ImageRepository); err != nil {
		return usageErr{err}
	}
	images, err := zke.Images(version, c.ImageRepository)
	if err != nil {
		return usageErr{err}
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "KIND\tNAME\tSOURCE\tCHECKSUM\n")
	for _, k := range slices.Sorted(maps.Keys(images)) {
		fmt.Fprintf(tw, "image\t%s\t%s\t-\n", k, images[k])
	}
	for _, f := range files {
		fmt.Fprintf(tw, "file\t%s\t%s\t%s\n", f.Name(), f.URL, f.ChecksumURL)
	}
	return tw.Flush()
}

// fetchArtifacts downloads files into dir, verified, as a mirror.
func fetchArtifacts(ctx context.Context, s cmdStreams, dir, mirror string, files []artifacts.File) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return usageErr{fmt.Errorf("dir: %w", err)}
	}
	cache, err := artifacts.New(abs, nil)
	if err != nil {
		return err
	}
	for _, f := range files {
		got, err := cache.Fetch(ctx, f, mirror)
		if err != nil {
			return err
		}
		how := "already there"
		if got.Source != "" {
			how = "from " + got.Source
		}
		fmt.Fprintf(s.out, "%s  %s (%s, SHA-256 as published)\n", got.SHA256, got.Path, how)
	}
	return nil
}
