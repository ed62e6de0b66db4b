package e2e

import (
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke"
)

// bundleFromRegistry serves the testbin's images from a registry on
// loopback (go-containerregistry's), each under the repository path of
// its upstream name, and runs `singlecloud artifacts bundle` against it
// with --registry-mirror, as a user would against a mirror of
// registry.k8s.io, ghcr.io and Docker Hub, and against the testbin's file
// mirror. It returns the image archive the bundle wrote: everything a
// cluster at KubeVersion runs (flannel's image included: it runs either
// pod network), under the names zke asks for.
func bundleFromRegistry(t *testing.T) string {
	t.Helper()
	return bundleFromRegistryAt(t, testbed.KubeVersion)
}

// bundleFromRegistryAt is bundleFromRegistry for a cluster at version.
func bundleFromRegistryAt(t *testing.T, version string) string {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	images, err := zke.Images(version, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range model.LoadBalancerImageComponents() {
		delete(images, k)
	}
	archives := testbinArchivesByTag(t)
	// containerd 1.x's default sandbox images, which the bundle carries
	// too: the testbin's pause under each name it lacks.
	pause, err := name.NewTag(images[model.ImagePause])
	if err != nil {
		t.Fatal(err)
	}
	refs := slices.Collect(maps.Values(images))
	from := map[string]name.Tag{}
	for _, ref := range zke.RuntimeSandboxImages() {
		refs = append(refs, ref)
		if tag, err := name.NewTag(ref); err == nil && archives[tag.Name()] == "" {
			from[tag.Name()] = pause
		}
	}
	for _, ref := range refs {
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		src, ok := from[tag.Name()]
		if !ok {
			src = tag
		}
		archive, ok := archives[src.Name()]
		if !ok {
			t.Fatalf("no testbin archive holds %s", ref)
		}
		img, err := tarball.ImageFromPath(archive, &src)
		if err != nil {
			t.Fatalf("%s in %s: %v", ref, archive, err)
		}
		dst, err := name.NewTag(host+"/"+tag.Context().RepositoryStr()+":"+tag.TagStr(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(dst, img); err != nil {
			t.Fatalf("push %s to the test registry: %v", ref, err)
		}
	}
	dir := t.TempDir()
	args := []string{"artifacts", "bundle", "--version", version, "--dir", dir,
		"--artifact-mirror", os.Getenv(testbed.ArtifactMirrorEnv)}
	for _, r := range []string{"registry.k8s.io", "ghcr.io", "docker.io"} {
		args = append(args, "--registry-mirror", r+"=http://"+host)
	}
	if out, err := exec.Command(binary, args...).CombinedOutput(); err != nil {
		t.Fatalf("singlecloud %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return filepath.Join(dir, "images-"+version+"-linux-amd64.tar")
}

// testbinArchivesByTag maps every name a testbin image archive carries,
// in its full form (registry.k8s.io/..., index.docker.io/library/...), to
// the archive.
func testbinArchivesByTag(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, img := range append(testbed.AllImages(), testbed.PreviousImages()...) {
		archive, err := testbed.ImageArchive(img)
		if err != nil {
			t.Fatal(err)
		}
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		for _, d := range m {
			for _, rt := range d.RepoTags {
				if tag, err := name.NewTag(rt); err == nil {
					out[tag.Name()] = archive
				}
			}
		}
	}
	return out
}
