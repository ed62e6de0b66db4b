package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke"
)

// TestArtifactsBundle bundles a release from a real registry (go-
// containerregistry's, on loopback) standing in for registry.k8s.io,
// ghcr.io and Docker Hub, and a file mirror: the archive holds every image
// a cluster's nodes run (and containerd 1.x's default sandbox images)
// under its upstream name with the digest the registry served, what docker load reads; an image the registry lacks
// fails the bundle naming it, and leaves no archive.
func TestArtifactsBundle(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	images, err := zke.Images("v1.36.3", "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // upstream name → digest pushed
	push := func(ref string) {
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := name.NewTag(host+"/"+tag.Context().RepositoryStr()+":"+tag.TagStr(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(dst, img); err != nil {
			t.Fatalf("push %s: %v", dst, err)
		}
		d, _ := img.Digest()
		want[ref] = d.String()
	}
	for k, ref := range images {
		if !slices.Contains(model.LoadBalancerImageComponents(), k) && k != model.ImageFlannel {
			push(ref)
		}
	}
	// containerd 1.6's and 1.7's default sandbox images are bundled too.
	for _, ref := range zke.RuntimeSandboxImages() {
		push(ref)
	}
	served := t.TempDir()
	files, err := zke.ReleaseFiles("v1.36.3", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	publishReleaseFiles(t, served, files, "")
	files1 := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer files1.Close()
	dir := t.TempDir()
	bundle := func(extra ...string) (int, string, string) {
		args := append([]string{"artifacts", "bundle", "--version", "v1.36.3", "--dir", dir, "--artifact-mirror", files1.URL + "/",
			"--registry-mirror", "registry.k8s.io=http://" + host, "--registry-mirror", "ghcr.io=http://" + host,
			"--registry-mirror", "docker.io=http://" + host}, extra...)
		code, out, errs := runCmd(t, nil, args...)
		return code, string(out), errs
	}
	archive := filepath.Join(dir, "images-v1.36.3-linux-amd64.tar")

	// flannel's image is not in the registry: the default bundle fails,
	// naming it, and writes no archive.
	if code, _, errs := bundle(); code != 1 || !strings.Contains(errs, images[model.ImageFlannel]) {
		t.Fatalf("bundle without flannel's image in the registry: exit %d: %s", code, errs)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*images*")); len(left) != 0 {
		t.Fatalf("a failed bundle left %v", left)
	}

	push(images[model.ImageFlannel])
	code, out, errs := bundle()
	if code != 0 {
		t.Fatalf("bundle: exit %d: %s", code, errs)
	}
	list, err := os.ReadFile(strings.TrimSuffix(archive, ".tar") + ".txt")
	if err != nil {
		t.Fatal(err)
	}
	for ref, digest := range want {
		tag, _ := name.NewTag(ref)
		img, err := tarball.ImageFromPath(archive, &tag)
		if err != nil {
			t.Errorf("%s is not in the archive under its name: %v", ref, err)
			continue
		}
		if d, err := img.Digest(); err != nil || d.String() != digest {
			t.Errorf("%s: the archive holds %s (%v); the registry served %s", ref, d, err, digest)
		}
		if !strings.Contains(string(list), ref+" "+digest) || !strings.Contains(out, digest+"  "+ref) {
			t.Errorf("%s %s is not listed:\n%s\n%s", ref, digest, list, out)
		}
	}
	for _, k := range model.LoadBalancerImageComponents() {
		lb, _ := name.NewTag(images[k])
		if _, err := tarball.ImageFromPath(archive, &lb); err == nil {
			t.Errorf("the load balancer's %s image was bundled without --load-balancer", k)
		}
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, strings.TrimPrefix(f.URL, "https://"))); err != nil {
			t.Errorf("release file %s not bundled: %v", f.Name(), err)
		}
	}
	for _, bad := range [][]string{{"--registry-mirror", "registry.k8s.io"}, {"--registry-mirror", "registry.k8s.io=bad host/x"}, {"--network-plugin", "calico"}} {
		if code, _, errs := bundle(bad...); code != 2 {
			t.Errorf("bundle %q: exit %d (%s), want 2", bad, code, errs)
		}
	}
}
