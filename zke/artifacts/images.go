package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// ErrDigestReference: an image named by digest cannot be written into a
// docker-archive, which names its images by tag.
var ErrDigestReference = errors.New("an image pinned by digest cannot be named in an image archive")

// dockerHub is the registry go-containerregistry names Docker Hub by; a
// mirror for it may be given as "docker.io".
const dockerHub = "index.docker.io"

// PulledImage is one image written into an archive: its name there and
// the digest of the manifest pulled for the archive's platform.
type PulledImage struct {
	Ref    string
	Digest string
}

// ImageMirrors maps a registry (registry.k8s.io, ghcr.io, docker.io) to
// the mirror images of it are pulled from instead: "host[:port][/path]",
// with the same repository paths below it; "http://" before it means a
// registry served over plain HTTP (a local one).
type ImageMirrors map[string]string

// WriteImageArchive pulls every image of refs for linux/arch, from its
// registry or its mirror in mirrors, with the credentials keychain finds
// (docker login's), and writes them under their own names as one
// docker-archive at path: what `docker load` reads and a cluster's
// imageArchive names. The file is written beside path and renamed over it
// once complete and synced, so a failed pull leaves no partial archive.
// It returns each image with its digest, in the order of refs.
func WriteImageArchive(ctx context.Context, path string, refs []string, arch string, mirrors ImageMirrors, keychain authn.Keychain) ([]PulledImage, error) {
	images := make(map[name.Reference]v1.Image, len(refs))
	var pulled []PulledImage
	for _, s := range refs {
		if strings.Contains(s, "@") {
			return nil, fmt.Errorf("image %s: %w; name it by tag", s, ErrDigestReference)
		}
		tag, err := name.NewTag(s)
		if err != nil {
			return nil, fmt.Errorf("image %q: %w", s, err)
		}
		src, err := mirrored(tag, mirrors)
		if err != nil {
			return nil, err
		}
		img, err := remote.Image(src, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain),
			remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			return nil, fmt.Errorf("pull %s (linux/%s) from %s: %w (check that this machine reaches the registry, or give a mirror of it)", s, arch, src.Context().RegistryStr(), err)
		}
		d, err := img.Digest()
		if err != nil {
			return nil, fmt.Errorf("pull %s: %w", s, err)
		}
		images[tag] = img
		pulled = append(pulled, PulledImage{Ref: s, Digest: d.String()})
	}
	if err := writeArchive(path, images); err != nil {
		return nil, err
	}
	return pulled, nil
}

// mirrored is where tag is pulled from: its mirror in mirrors, with the
// same repository path and tag, or tag itself.
func mirrored(tag name.Tag, mirrors ImageMirrors) (name.Tag, error) {
	reg := tag.Context().RegistryStr()
	m, ok := mirrors[reg]
	if !ok && reg == dockerHub {
		m, ok = mirrors["docker.io"]
	}
	if !ok {
		return tag, nil
	}
	var opts []name.Option
	if rest, plain := strings.CutPrefix(m, "http://"); plain {
		m, opts = rest, append(opts, name.Insecure)
	}
	m = strings.TrimSuffix(strings.TrimPrefix(m, "https://"), "/")
	src, err := name.NewTag(m+"/"+tag.Context().RepositoryStr()+":"+tag.TagStr(), opts...)
	if err != nil {
		return tag, fmt.Errorf("mirror %q of %s: %w", m, reg, err)
	}
	return src, nil
}

// writeArchive writes images as a docker-archive at path, through a
// temporary file in its directory, synced and renamed into place
// (durable.WriteFile).
func writeArchive(path string, images map[name.Reference]v1.Image) error {
	err := durable.WriteFile(path, 0o644, func(w io.Writer) error {
		return tarball.MultiRefWrite(images, w)
	})
	if err != nil {
		return fmt.Errorf("write the image archive %s: %w", path, err)
	}
	return nil
}
