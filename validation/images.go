package validation

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// validateImages checks the image overrides: every key a component zke
// runs, every value an image reference. Keys are checked in sorted order,
// so the report does not depend on map order.
func validateImages(c *collector, images map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(images)) {
		field := imageField(k)
		if !slices.Contains(model.ImageComponents(), k) {
			c.addf(field, "unknown component %q; give images for %s", k, orList(model.ImageComponents()))
			continue
		}
		if p := imageRefProblem(images[k], "registry.example.com/zdnscloud/"+k+":tag"); p != "" {
			c.addf(field, "%s", p)
		}
	}
}

// maxArchivePathLen bounds imageArchive.
const maxArchivePathLen = 1024

// imageArchiveLike is an example imageArchive for messages.
const imageArchiveLike = "images.tar or v1.36/images.tar"

// validateImageArchive checks the path of the image archive when one is
// set: a clean path relative to the server's image directory (--image-dir,
// default <db dir>/images), without "..", control characters or a leading
// '/', so that it cannot name a file outside that directory (the database,
// its key, /etc/shadow). The installer resolves it inside the directory
// without following symlinks out of it; whether the file exists is for it
// to find out when it runs: this check does no I/O.
func validateImageArchive(c *collector, archive string) {
	if archive == "" {
		return
	}
	const where = "the server's image directory (--image-dir, default <db dir>/images)"
	switch {
	case len(archive) > maxArchivePathLen:
		c.addf("imageArchive", "is %d characters long; use at most %d", len(archive), maxArchivePathLen)
	case hasControl(archive) || strings.ContainsRune(archive, '\\'):
		c.addf("imageArchive", "contains control characters or '\\'; give the archive's path inside %s, like %s", where, imageArchiveLike)
	case path.IsAbs(archive):
		c.addf("imageArchive", "%q is an absolute path; put the archive in %s and give its path relative to it, like %s", archive, where, imageArchiveLike)
	case slices.Contains(strings.Split(archive, "/"), ".."):
		c.addf("imageArchive", "%q must not contain \"..\": the archive must be inside %s; give its path relative to it, like %s", archive, where, imageArchiveLike)
	case path.Clean(archive) != archive || archive == ".":
		c.addf("imageArchive", "%q is not a clean path to a file; write it as %s, relative to %s", archive, path.Clean(archive), where)
	}
}

// imageField is the path of images[k]: images.etcd for a plain key, or
// images["..."] for a key that would not read as one.
func imageField(k string) string {
	if k != "" && !strings.ContainsFunc(k, func(r rune) bool { return !isLowerAlnum(r) && r != '-' && r != '_' }) {
		return "images." + k
	}
	return fmt.Sprintf("images[%q]", k)
}

// imageRepositoryLike is an example imageRepository for messages.
const imageRepositoryLike = "registry.example.com/k8s"

// ImageRepository checks an imageRepository given outside a cluster
// config (singlecloud artifacts list) as a cluster's is checked.
func ImageRepository(repo string) error {
	var errs collector
	validateImageRepository(&errs, repo)
	return errs.err()
}

// validateImageRepository checks the registry path that replaces
// registry.k8s.io in the default images: with an image name and tag after
// it, it must be an image reference, and it carries no tag or digest of
// its own.
func validateImageRepository(c *collector, repo string) {
	if repo == "" {
		return
	}
	const field = "imageRepository"
	slash := strings.LastIndex(repo, "/")
	if strings.Contains(repo, "@") || slash >= 0 && strings.Contains(repo[slash:], ":") {
		c.addf(field, "%q has a tag or digest; give only a registry and path, like %s", repo, imageRepositoryLike)
		return
	}
	if p := imageRefProblem(repo+"/kube-apiserver:v1", imageRepositoryLike+"/kube-apiserver:v1"); p != "" {
		c.addf(field, "%q is not a registry path (%s); give one like %s", repo, p, imageRepositoryLike)
	}
}
