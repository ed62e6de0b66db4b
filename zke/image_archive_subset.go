package zke

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
)

// archiveManifestName is the index of a docker-load archive: what
// `docker save`, go-containerregistry's tarball package and `singlecloud
// artifacts bundle` write, and what docker load reads.
const archiveManifestName = "manifest.json"

// maxArchiveManifest bounds the index read into memory: a bundle's is a
// few kilobytes.
const maxArchiveManifest = 16 << 20

// archiveEntry is one image of manifest.json: its names, and the files
// of the archive that hold its configuration and layers.
type archiveEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// errNotSubsettable is an archive whose index cannot be read: it is then
// sent whole, as docker load takes it.
var errNotSubsettable = errors.New("no readable manifest.json")

// archiveSubset picks from the image archive in ra (size bytes) the
// images named by refs. It returns a writer of a docker-load archive
// holding only them (their files copied byte for byte, in the archive's
// order, with a manifest.json listing only them) and the refs it holds,
// in the order of refs.
// A node then receives what it runs, not every image of the cluster: a
// worker skips the control plane's images, which is most of a bundle.
// errNotSubsettable means the archive has no index to pick from.
func archiveSubset(ra io.ReaderAt, size int64, refs []string) (write func(io.Writer) error, found []string, err error) {
	raw, links, members, err := readArchiveIndex(io.NewSectionReader(ra, 0, size))
	if err != nil {
		return nil, nil, err
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errNotSubsettable, err)
	}
	want := map[string]string{} // normalised name -> ref as asked
	for _, ref := range refs {
		if tag, err := name.NewTag(ref); err == nil {
			want[tag.Name()] = ref
		}
	}
	var keep []json.RawMessage
	files, held := map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		var ent archiveEntry
		if err := json.Unmarshal(e, &ent); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errNotSubsettable, err)
		}
		hit := false
		for _, rt := range ent.RepoTags {
			tag, err := name.NewTag(rt)
			if err != nil {
				continue
			}
			if ref, ok := want[tag.Name()]; ok {
				hit, held[ref] = true, true
			}
		}
		if !hit {
			continue
		}
		keep = append(keep, e)
		for _, f := range append([]string{ent.Config}, ent.Layers...) {
			// docker save links a layer another image holds too: the
			// link and what it leads to (links may chain).
			f = cleanArchivePath(f)
			for i := 0; i < 8 && f != "" && !files[f]; i++ {
				files[f] = true
				f = links[f]
			}
		}
	}
	for f := range files {
		if !members[f] {
			return nil, nil, fmt.Errorf("manifest.json names %s, which the archive does not hold: write the archive again (singlecloud artifacts bundle, or docker save)", f)
		}
	}
	for _, ref := range refs {
		if held[ref] && !slices.Contains(found, ref) {
			found = append(found, ref)
		}
	}
	manifest, err := json.Marshal(keep)
	if err != nil {
		return nil, nil, err
	}
	write = func(w io.Writer) error {
		return copyArchiveFiles(w, io.NewSectionReader(ra, 0, size), manifest, files)
	}
	return write, found, nil
}

// readArchiveIndex returns manifest.json of the tar in r, where each of
// its links leads (as a member's name: a symbolic link's target relative
// to its directory or to the root when absolute, a hard link's relative
// to the root) and the names of its members, skipping over every other
// file's content (seeking, not reading, through r).
func readArchiveIndex(r io.Reader) (manifest []byte, links map[string]string, members map[string]bool, err error) {
	tr := tar.NewReader(r)
	links, members = map[string]string{}, map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			if manifest == nil {
				return nil, nil, nil, errNotSubsettable
			}
			return manifest, links, members, nil
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: %w", errNotSubsettable, err)
		}
		p := cleanArchivePath(h.Name)
		members[p] = true
		switch {
		case h.Typeflag == tar.TypeSymlink && path.IsAbs(h.Linkname):
			links[p] = cleanArchivePath(h.Linkname)
		case h.Typeflag == tar.TypeSymlink:
			links[p] = cleanArchivePath(path.Join(path.Dir(p), h.Linkname))
		case h.Typeflag == tar.TypeLink:
			links[p] = cleanArchivePath(h.Linkname)
		case p == archiveManifestName:
			b, err := io.ReadAll(io.LimitReader(tr, maxArchiveManifest+1))
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%w: %w", errNotSubsettable, err)
			}
			if len(b) > maxArchiveManifest {
				return nil, nil, nil, fmt.Errorf("%w: it is over %d bytes", errNotSubsettable, maxArchiveManifest)
			}
			manifest = b
		}
	}
}

// copyArchiveFiles writes to w a tar of manifest and of the files of the
// tar in r whose names are in files, with their directories.
func copyArchiveFiles(w io.Writer, r io.Reader, manifest []byte, files map[string]bool) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: archiveManifestName, Mode: 0o644, Size: int64(len(manifest)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := tw.Write(manifest); err != nil {
		return err
	}
	dirs := map[string]bool{}
	for f := range files {
		for d := path.Dir(f); d != "." && d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read the image archive: %w", err)
		}
		p := cleanArchivePath(h.Name)
		switch {
		case h.Typeflag == tar.TypeDir && dirs[p]:
		case (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink) && files[p]:
		default:
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("copy %s of the image archive: %w", h.Name, err)
		}
	}
	return tw.Close()
}

// cleanArchivePath is a tar member's name as manifest.json names it.
func cleanArchivePath(p string) string {
	return path.Clean("/" + p)[1:]
}
