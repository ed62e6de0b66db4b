package zke

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestArchiveSubset picks images out of a real archive (go-containerregistry's
// tarball, the format `singlecloud artifacts bundle` writes): the subset
// holds exactly the images asked for, byte for byte (same digests, readable
// by the same loader docker's format is), and none of the others' files.
func TestArchiveSubset(t *testing.T) {
	imgs := map[string]v1.Image{}
	refs := map[name.Reference]v1.Image{}
	for _, ref := range []string{"registry.k8s.io/kube-apiserver:v1", "registry.k8s.io/kube-proxy:v1", "ghcr.io/flannel-io/flannel:v2"} {
		img, err := random.Image(2048, 3)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		imgs[ref], refs[tag] = img, img
	}
	var archive bytes.Buffer
	if err := tarball.MultiRefWrite(refs, &archive); err != nil {
		t.Fatal(err)
	}
	ra := bytes.NewReader(archive.Bytes())

	tests := []struct {
		name      string
		ask, want []string
	}{
		{"a worker's", []string{"registry.k8s.io/kube-proxy:v1", "ghcr.io/flannel-io/flannel:v2", "registry.k8s.io/pause:3.6"},
			[]string{"registry.k8s.io/kube-proxy:v1", "ghcr.io/flannel-io/flannel:v2"}},
		{"one", []string{"registry.k8s.io/kube-apiserver:v1"}, []string{"registry.k8s.io/kube-apiserver:v1"}},
		{"none held", []string{"docker.io/library/debian:bookworm-slim"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write, found, err := archiveSubset(ra, int64(ra.Len()), tt.ask)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(found, tt.want) {
				t.Fatalf("found %v, want %v", found, tt.want)
			}
			var sub bytes.Buffer
			if err := write(&sub); err != nil {
				t.Fatal(err)
			}
			opener := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(sub.Bytes())), nil }
			m, err := tarball.LoadManifest(opener)
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != len(tt.want) {
				t.Fatalf("subset lists %d images, want %d: %+v", len(m), len(tt.want), m)
			}
			for _, ref := range tt.want {
				tag, _ := name.NewTag(ref)
				got, err := tarball.Image(opener, &tag)
				if err != nil {
					t.Fatalf("%s in the subset: %v", ref, err)
				}
				gd, _ := got.Digest()
				wd, _ := imgs[ref].Digest()
				if gd != wd {
					t.Errorf("%s: digest %s, want %s", ref, gd, wd)
				}
				layers, err := got.Layers()
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range layers {
					rc, err := l.Compressed()
					if err != nil {
						t.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, rc); err != nil {
						t.Fatalf("%s: a layer is not whole: %v", ref, err)
					}
					rc.Close()
				}
			}
			// Nothing of the images not asked for.
			members := tarMembers(t, sub.Bytes())
			wantMembers := 1 // manifest.json
			for _, ref := range tt.want {
				layers, _ := imgs[ref].Layers()
				wantMembers += 1 + len(layers)
			}
			if len(members) != wantMembers {
				t.Errorf("subset has %d members, want %d: %v", len(members), wantMembers, members)
			}
		})
	}
}

// TestArchiveSubsetDockerSave: `docker save`'s legacy layout, where an
// image's layer is a symbolic link to another image's copy (or a hard
// link, in a re-packed archive), keeps the link and what it leads to; a
// manifest naming a file the archive lacks is an error naming it; an
// archive without manifest.json is not picked from (it is sent whole).
func TestArchiveSubsetDockerSave(t *testing.T) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	add := func(h *tar.Header, data string) {
		t.Helper()
		h.Size = int64(len(data))
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, data); err != nil {
			t.Fatal(err)
		}
	}
	add(&tar.Header{Name: "aaa/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "aaa/layer.tar", Mode: 0o644}, "shared layer")
	add(&tar.Header{Name: "bbb/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "bbb/layer.tar", Typeflag: tar.TypeSymlink, Linkname: "../aaa/layer.tar"}, "")
	add(&tar.Header{Name: "ccc/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "ccc/layer.tar", Mode: 0o644}, "other layer")
	add(&tar.Header{Name: "ddd/", Typeflag: tar.TypeDir, Mode: 0o755}, "")
	add(&tar.Header{Name: "ddd/layer.tar", Typeflag: tar.TypeLink, Linkname: "ccc/layer.tar"}, "")
	add(&tar.Header{Name: "one.json", Mode: 0o644}, "{}")
	add(&tar.Header{Name: "two.json", Mode: 0o644}, "{}")
	add(&tar.Header{Name: "manifest.json", Mode: 0o644},
		`[{"Config":"one.json","RepoTags":["busybox:1"],"Layers":["ccc/layer.tar","aaa/layer.tar"]},`+
			`{"Config":"two.json","RepoTags":["registry.k8s.io/pause:3.6"],"Layers":["bbb/layer.tar","ddd/layer.tar"]}]`)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ra := bytes.NewReader(b.Bytes())
	write, found, err := archiveSubset(ra, int64(ra.Len()), []string{"registry.k8s.io/pause:3.6"})
	if err != nil || !slices.Equal(found, []string{"registry.k8s.io/pause:3.6"}) {
		t.Fatalf("found %v, %v", found, err)
	}
	var sub bytes.Buffer
	if err := write(&sub); err != nil {
		t.Fatal(err)
	}
	want := []string{"manifest.json", "aaa/", "aaa/layer.tar", "bbb/", "bbb/layer.tar", "ccc/", "ccc/layer.tar", "ddd/", "ddd/layer.tar", "two.json"}
	if got := tarMembers(t, sub.Bytes()); !slices.Equal(got, want) {
		t.Errorf("subset members %v, want %v", got, want)
	}

	// A manifest naming a file the archive lacks is an error naming it.
	var broken bytes.Buffer
	tw = tar.NewWriter(&broken)
	m := `[{"Config":"gone.json","RepoTags":["busybox:1"],"Layers":[]}]`
	tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o644, Size: int64(len(m)), Typeflag: tar.TypeReg})
	io.WriteString(tw, m)
	tw.Close()
	if _, _, err := archiveSubset(bytes.NewReader(broken.Bytes()), int64(broken.Len()), []string{"busybox:1"}); err == nil || !strings.Contains(err.Error(), "gone.json") {
		t.Errorf("a manifest naming a missing file: %v", err)
	}

	var plain bytes.Buffer
	tw = tar.NewWriter(&plain)
	if err := tw.WriteHeader(&tar.Header{Name: "index.json", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(tw, "{}")
	tw.Close()
	if _, _, err := archiveSubset(bytes.NewReader(plain.Bytes()), int64(plain.Len()), []string{"busybox:1"}); !errors.Is(err, errNotSubsettable) {
		t.Errorf("an archive without manifest.json: %v, want errNotSubsettable", err)
	}
}

// tarMembers lists the names in a tar, in order.
func tarMembers(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
