package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

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
		ref := images[k]
		switch {
		case ref == "":
			c.addf(field, "is empty; give an image reference like registry.example.com/zdnscloud/%s:tag, or leave the entry out to use the default", k)
		case strings.ContainsFunc(ref, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
			c.addf(field, "%q contains white space; an image reference looks like registry.example.com/zdnscloud/%s:tag", ref, k)
		}
	}
}

// validateImageArchive checks the path of the image archive on the
// singlecloud server when one is set. Whether the file exists is for the
// installer to find out when it runs: this check does no I/O.
func validateImageArchive(c *collector, archive string) {
	if archive == "" {
		return
	}
	if p := pathProblem(archive, "/var/lib/singlecloud/images.tar"); p != "" {
		c.addf("imageArchive", "%s (the path on the singlecloud server of a `docker save` archive)", p)
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
