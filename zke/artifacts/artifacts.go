// Package artifacts fetches the release files zke installs on nodes that
// no container image carries (the CNI plugins), from their upstream
// address or a mirror of it, verifies each against the SHA-256 its project
// publishes beside it, and keeps the verified files in a cache on the
// singlecloud server, so that a file is downloaded once and nodes never
// need to reach the internet: zke uploads what they need over SFTP.
//
// The cache is laid out as a mirror: a file whose upstream address is
// https://host/some/path is kept at <dir>/host/some/path with its
// checksum at <dir>/host/some/path.sha256. A copy of the directory served
// over HTTP is therefore a mirror other installations can use (the
// air-gapped path), and a mirror is laid out the same way.
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Bounds of a fetch.
const (
	// MaxFileSize caps a release file: the CNI plugins' tarball is
	// ~50 MB, a kubelet ~80 MB.
	MaxFileSize = 512 << 20
	// maxChecksumSize caps a checksum file: one line.
	maxChecksumSize = 4 << 10
	// headerTimeout bounds the wait for a server's answer to begin; the
	// body's transfer is bounded by the caller's context.
	headerTimeout = 30 * time.Second
)

// File is a release file: where its project publishes it and its
// checksum.
type File struct {
	// URL is the file's upstream https address.
	URL string
	// ChecksumURL is the upstream address of its published SHA-256 (a
	// file whose first field is the hex digest).
	ChecksumURL string
}

// Name is the file's base name, for messages.
func (f File) Name() string { return path.Base(f.URL) }

// Fetched is a verified file in the cache.
type Fetched struct {
	File
	// Path is the file in the cache.
	Path string
	// SHA256 is its hex digest, equal to the published one.
	SHA256 string
	// Source is the address it was downloaded from this time, or "" when
	// the cache already held it.
	Source string
}

// ErrNotFound: the mirror or upstream answered 404 for a file or its
// checksum.
var ErrNotFound = errors.New("not found")

// ErrChecksum classifies a file whose digest differs from the published
// one (see *ChecksumError).
var ErrChecksum = errors.New("checksum mismatch")

// ChecksumError is a downloaded file whose SHA-256 is not the published
// one. The file is not kept.
type ChecksumError struct {
	Name, Source, Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s from %s has SHA-256 %s, but its published checksum is %s: the download or the mirror is corrupt or tampered with; nothing was installed",
		e.Name, e.Source, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrChecksum) true.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum }

// Cache is the artifact cache in one directory. It is safe for concurrent
// use: fetches of one file are made one at a time.
type Cache struct {
	dir    string
	client *http.Client
	mu     sync.Mutex
	locks  map[string]*sync.Mutex
}

// New returns the cache in dir (created 0700 on first use). client is
// used for downloads; nil means one with bounded connects and header
// waits.
func New(dir string, client *http.Client) (*Cache, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("artifact cache %q: the directory must be an absolute path", dir)
	}
	if client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = headerTimeout
		client = &http.Client{Transport: t}
	}
	return &Cache{dir: dir, client: client, locks: map[string]*sync.Mutex{}}, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// lock serialises fetches of one cache path.
func (c *Cache) lock(p string) func() {
	c.mu.Lock()
	l, ok := c.locks[p]
	if !ok {
		l = &sync.Mutex{}
		c.locks[p] = l
	}
	c.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// cachePath is where f is kept: its upstream host and path under the
// cache directory. The addresses come from zke's own tables, never from
// a user; anything else is refused.
func (c *Cache) cachePath(f File) (string, error) {
	rel, err := mirrorPath(f.URL)
	if err != nil {
		return "", err
	}
	return filepath.Join(c.dir, filepath.FromSlash(rel)), nil
}

// mirrorPath is the path of upstream under a mirror: host/path.
func mirrorPath(upstream string) (string, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.User != nil {
		return "", fmt.Errorf("artifact address %q: want an https address without a query", upstream)
	}
	rel := path.Join(u.Host, u.Path)
	if !filepath.IsLocal(filepath.FromSlash(rel)) || strings.HasSuffix(u.Path, "/") {
		return "", fmt.Errorf("artifact address %q: the path must name a file", upstream)
	}
	return rel, nil
}

// SourceURL is where upstream is fetched from: itself without a mirror,
// else the same host and path under mirror (an http or https base
// address, validated by the cluster's validation).
func SourceURL(mirror, upstream string) (string, error) {
	rel, err := mirrorPath(upstream)
	if err != nil {
		return "", err
	}
	if mirror == "" {
		return upstream, nil
	}
	return strings.TrimSuffix(mirror, "/") + "/" + rel, nil
}

// Fetch returns f verified in the cache: the cached copy when its digest
// still matches the checksum stored beside it, else a download from
// mirror (or upstream when mirror is "") checked against the published
// checksum before it enters the cache. A mismatch is a *ChecksumError;
// a file or checksum the server does not have matches ErrNotFound.
func (c *Cache) Fetch(ctx context.Context, f File, mirror string) (Fetched, error) {
	dst, err := c.cachePath(f)
	if err != nil {
		return Fetched{}, err
	}
	defer c.lock(dst)()
	if sum, ok := cached(dst); ok {
		return Fetched{File: f, Path: dst, SHA256: sum}, nil
	}
	src, err := SourceURL(mirror, f.URL)
	if err != nil {
		return Fetched{}, err
	}
	sumSrc, err := SourceURL(mirror, f.ChecksumURL)
	if err != nil {
		return Fetched{}, err
	}
	want, err := c.publishedSum(ctx, sumSrc)
	if err != nil {
		return Fetched{}, err
	}
	got, err := c.download(ctx, src, dst, want)
	if err != nil {
		return Fetched{}, err
	}
	if got != want {
		return Fetched{}, &ChecksumError{Name: f.Name(), Source: src, Want: want, Got: got}
	}
	return Fetched{File: f, Path: dst, SHA256: got, Source: src}, nil
}

// cached returns the digest of the file at p when it and its checksum
// file are both there and agree.
func cached(p string) (string, bool) {
	b, err := os.ReadFile(p + checksumSuffix)
	if err != nil {
		return "", false
	}
	want, err := parseChecksum(b)
	if err != nil {
		return "", false
	}
	got, err := fileSHA256(p)
	if err != nil || got != want {
		return "", false
	}
	return got, true
}
