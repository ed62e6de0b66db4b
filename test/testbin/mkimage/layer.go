package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// epoch is the modification time of every file in every image, so that the
// same inputs always give the same bytes.
func epoch() time.Time { return time.Unix(0, 0).UTC() }

// entry is one file, directory or symbolic link of an image's root
// filesystem. Exactly one of src (a file on disk), content or link is used
// for regular files and symlinks; directories use none.
type entry struct {
	name    string // path inside the image, without a leading slash
	mode    int64
	typ     byte
	src     string
	content string
	link    string
}

func dir(name string, mode int64) entry { return entry{name: name, mode: mode, typ: tar.TypeDir} }

func file(name string, mode int64, src string) entry {
	return entry{name: name, mode: mode, typ: tar.TypeReg, src: src}
}

func data(name string, mode int64, content string) entry {
	return entry{name: name, mode: mode, typ: tar.TypeReg, content: content}
}

func symlink(name, target string) entry {
	return entry{name: name, mode: 0o777, typ: tar.TypeSymlink, link: target}
}

// writeLayer writes the uncompressed layer tar of entries to w, sorted by
// name (a directory sorts before its contents), owned by root, at epoch.
func writeLayer(w io.Writer, entries []entry) error {
	sorted := append([]entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	tw := tar.NewWriter(w)
	for _, e := range sorted {
		if err := writeEntry(tw, e); err != nil {
			return fmt.Errorf("layer entry /%s: %w", e.name, err)
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, e entry) error {
	hdr := &tar.Header{
		Typeflag: e.typ,
		Name:     e.name,
		Mode:     e.mode,
		ModTime:  epoch(),
		Format:   tar.FormatPAX,
	}
	switch e.typ {
	case tar.TypeDir:
		hdr.Name = strings.TrimSuffix(e.name, "/") + "/"
		return tw.WriteHeader(hdr)
	case tar.TypeSymlink:
		hdr.Linkname = e.link
		return tw.WriteHeader(hdr)
	}
	if e.src == "" {
		hdr.Size = int64(len(e.content))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := io.WriteString(tw, e.content)
		return err
	}
	f, err := os.Open(e.src)
	if err != nil {
		return fmt.Errorf("open (run make testbin to build it): %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Size = st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return fmt.Errorf("%s changed size while being read", e.src)
	}
	return nil
}
