package main

import (
	"archive/tar"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// image is one single-layer image and the archive file it is written to.
type image struct {
	file       string
	tags       []string
	entrypoint []string
	cmd        []string
	// user, stopSignal and workingDir are the image's USER, STOPSIGNAL
	// and WORKDIR (root, SIGTERM and / when empty).
	user, stopSignal, workingDir string
	root                         []entry
	// rootTar, when set, is the image's layer as a ready tar file (a
	// root file system mmdebstrap wrote) instead of root.
	rootTar string
}

// layer writes the image's one layer to w.
func (img image) layer(w io.Writer) error {
	if img.rootTar == "" {
		return writeLayer(w, img.root)
	}
	f, err := os.Open(img.rootTar)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// imageConfig is the subset of the OCI/Docker image configuration the
// testbed's images use. Field order is fixed by the struct, so the JSON (and
// thus the image ID) is reproducible.
type imageConfig struct {
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Created      string        `json:"created"`
	Config       runConfig     `json:"config"`
	RootFS       rootFS        `json:"rootfs"`
	History      []historyItem `json:"history"`
}

type runConfig struct {
	Env        []string `json:"Env"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir"`
	User       string   `json:"User,omitempty"`
	StopSignal string   `json:"StopSignal,omitempty"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type historyItem struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// manifestItem is one element of a docker-archive's manifest.json.
type manifestItem struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// write builds the archive in a temporary file next to path and renames it
// into place, so a reader never sees a half-written archive. The layer is
// generated twice (once to hash it, once into the archive) instead of being
// buffered: it is ~500 MB for the kubernetes image.
func (img image) write(path string) error {
	hasher := sha256.New()
	counter := &countingWriter{w: hasher}
	if err := img.layer(counter); err != nil {
		return err
	}
	diffID := hex.EncodeToString(hasher.Sum(nil))
	created := epoch().Format("2006-01-02T15:04:05Z")
	config, err := json.Marshal(imageConfig{
		Architecture: "amd64",
		OS:           "linux",
		Created:      created,
		Config: runConfig{Env: []string{imagePath}, Entrypoint: img.entrypoint, Cmd: img.cmd, WorkingDir: cmp.Or(img.workingDir, "/"),
			User: img.user, StopSignal: img.stopSignal},
		RootFS:  rootFS{Type: "layers", DiffIDs: []string{"sha256:" + diffID}},
		History: []historyItem{{Created: created, CreatedBy: "singlecloud test/testbin/mkimage"}},
	})
	if err != nil {
		return fmt.Errorf("encode image config: %w", err)
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := diffID + "/layer.tar"
	manifest, err := json.Marshal([]manifestItem{{Config: configName, RepoTags: img.tags, Layers: []string{layerName}}})
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), ".mkimage-*")
	if err != nil {
		return fmt.Errorf("create archive: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	tw := tar.NewWriter(tmp)
	put := func(name string, content []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: epoch(), Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(content)
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: diffID + "/", Mode: 0o755, ModTime: epoch(), Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: layerName, Mode: 0o644, Size: counter.n, ModTime: epoch(), Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	check := sha256.New()
	if err := img.layer(io.MultiWriter(tw, check)); err != nil {
		return err
	}
	if hex.EncodeToString(check.Sum(nil)) != diffID {
		return fmt.Errorf("an input file changed while the image was written; rerun make testbin")
	}
	if err := put(configName, config); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := put("manifest.json", manifest); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("install archive: %w", err)
	}
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
