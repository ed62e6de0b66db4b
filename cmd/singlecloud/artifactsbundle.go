package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/artifacts"
)

// bundleOptions are the flags of `singlecloud artifacts bundle` that
// choose its images.
type bundleOptions struct {
	dir, version, repo string
	archs              []string
	loadBalancer       bool
	mirrors            artifacts.ImageMirrors
}

// flags declares the bundle's own flags on fs.
func (b *bundleOptions) flags(fs *flag.FlagSet) {
	// Earlier releases bundled flannel's image for the flannel plugin
	// only; both plugins now run flanneld, so the flag chooses nothing.
	// It is accepted (and checked) so that their scripts keep working.
	fs.Func("network-plugin", "flannel or bridge: accepted for scripts of earlier releases; both pod networks run flanneld, whose image is always bundled (bundle)", func(v string) error {
		if v != model.PluginFlannel && v != model.PluginBridge {
			return fmt.Errorf("%q: give %s or %s", v, model.PluginFlannel, model.PluginBridge)
		}
		return nil
	})
	fs.BoolVar(&b.loadBalancer, "load-balancer", false, "bundle the shared endpoint's haproxy and keepalived images too, for clusters with a controlPlaneEndpoint (bundle)")
	b.mirrors = artifacts.ImageMirrors{}
	fs.Func("registry-mirror", "REGISTRY=MIRROR: pull REGISTRY's images from MIRROR (host[:port][/path], http:// for plain HTTP); repeatable (bundle)", func(v string) error {
		reg, m, ok := strings.Cut(v, "=")
		if !ok || reg == "" || m == "" {
			return fmt.Errorf("%q: want REGISTRY=MIRROR, like registry.k8s.io=mirror.local:5000/k8s", v)
		}
		bare := strings.TrimPrefix(strings.TrimPrefix(m, "http://"), "https://")
		if err := validation.ImageRepository(bare); err != nil {
			return fmt.Errorf("mirror of %s: %w", reg, err)
		}
		b.mirrors[reg] = m
		return nil
	})
}

// bundleImages writes, for each architecture, the images the nodes of a
// cluster at b.version run (and, without an image repository, the sandbox
// images containerd 1.6 and 1.7 use by default) into one archive in b.dir, with the list of what it
// holds beside it.
func bundleImages(ctx context.Context, s cmdStreams, b bundleOptions) error {
	if err := validation.ImageRepository(b.repo); err != nil {
		return usageErr{err}
	}
	images, err := zke.Images(b.version, b.repo)
	if err != nil {
		return usageErr{err}
	}
	if !b.loadBalancer {
		for _, k := range model.LoadBalancerImageComponents() {
			delete(images, k)
		}
	}
	var refs []string
	for _, k := range slices.Sorted(maps.Keys(images)) {
		if !slices.Contains(refs, images[k]) {
			refs = append(refs, images[k])
		}
	}
	// containerd 1.x's own sandbox images: a node whose containerd runs
	// as its package configures it starts every pod with one of them.
	// Not for a private repository: the installation then pulls nothing
	// from registry.k8s.io (the bundle would fail where it is not
	// reachable), and its nodes' containerd names its sandbox image.
	if b.repo == "" {
		for _, ref := range zke.RuntimeSandboxImages() {
			if !slices.Contains(refs, ref) {
				refs = append(refs, ref)
			}
		}
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return fmt.Errorf("dir: %w", err)
	}
	for _, arch := range b.archs {
		arch = strings.TrimSpace(arch)
		base := filepath.Join(b.dir, "images-"+b.version+"-linux-"+arch)
		pulled, err := artifacts.WriteImageArchive(ctx, base+".tar", refs, arch, b.mirrors, authn.DefaultKeychain)
		if err != nil {
			if errors.Is(err, artifacts.ErrDigestReference) {
				return usageErr{err}
			}
			return err
		}
		var list strings.Builder
		for _, p := range pulled {
			fmt.Fprintf(&list, "%s %s\n", p.Ref, p.Digest)
			fmt.Fprintf(s.out, "%s  %s (linux/%s)\n", p.Digest, p.Ref, arch)
		}
		if err := os.WriteFile(base+".txt", []byte(list.String()), 0o644); err != nil {
			return fmt.Errorf("write %s.txt: %w", base, err)
		}
		fmt.Fprintf(s.out, "wrote %s.tar: %d images (name it, relative to the server's --image-dir, as a cluster's imageArchive)\n", base, len(pulled))
	}
	return nil
}
