package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// Suffixes of the cache's files beside a release file: its checksum, and
// the download in progress (a fixed name, so that a crash's leftover is
// overwritten by the next fetch of the same file, under its lock).
const (
	checksumSuffix = ".sha256"
	partSuffix     = ".part"
)

// publishedSum downloads and parses the checksum at src.
func (c *Cache) publishedSum(ctx context.Context, src string) (string, error) {
	body, err := c.get(ctx, src)
	if err != nil {
		return "", err
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxChecksumSize+1))
	if err != nil {
		return "", fmt.Errorf("download %s: %w", src, err)
	}
	if len(b) > maxChecksumSize {
		return "", fmt.Errorf("%s is not a checksum file: longer than %d bytes", src, maxChecksumSize)
	}
	sum, err := parseChecksum(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", src, err)
	}
	return sum, nil
}

// parseChecksum reads a published SHA-256: the first field of the file
// (dl.k8s.io's files hold the digest alone, GitHub releases' "<digest>
// <name>"), 64 hex digits.
func parseChecksum(b []byte) (string, error) {
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return "", errors.New("the checksum file is empty")
	}
	sum := strings.ToLower(fields[0])
	if _, err := hex.DecodeString(sum); err != nil || len(sum) != sha256.Size*2 {
		return "", fmt.Errorf("the checksum file does not start with a SHA-256 hex digest (%.70q)", fields[0])
	}
	return sum, nil
}

// get starts a download of src; a status other than 200 is an error
// (404 matching ErrNotFound).
func (c *Cache) get(ctx context.Context, src string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", src, err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download %s: %w (check that the singlecloud server reaches it, or give the cluster an artifactMirror it reaches)", src, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("download %s: %w (404): put the file there, or use another artifactMirror", src, ErrNotFound)
		}
		return nil, fmt.Errorf("download %s: the server answered %s", src, resp.Status)
	}
	return resp.Body, nil
}

// download writes src to dst through dst.part, hashing as it goes, and
// returns the digest. Only a file whose digest is want enters the cache:
// dst, then its checksum file, each renamed into place and made durable.
// Anything else leaves the cache as it was.
func (c *Cache) download(ctx context.Context, src, dst, want string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", fmt.Errorf("artifact cache: %w", err)
	}
	body, err := c.get(ctx, src)
	if err != nil {
		return "", err
	}
	defer body.Close()
	part := dst + partSuffix
	f, err := os.OpenFile(part, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", fmt.Errorf("artifact cache: %w", err)
	}
	defer os.Remove(part)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, MaxFileSize+1))
	if err == nil && n > MaxFileSize {
		err = fmt.Errorf("larger than %d MiB", MaxFileSize>>20)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("download %s: %w", src, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != want {
		return got, nil
	}
	if err := os.Chmod(part, 0o644); err != nil {
		return "", fmt.Errorf("artifact cache: %w", err)
	}
	if err := os.Rename(part, dst); err != nil {
		return "", fmt.Errorf("artifact cache: %w", err)
	}
	if err := writeChecksum(dst, got); err != nil {
		return "", err
	}
	return got, nil
}

// writeChecksum stores sum beside dst, atomically and durably.
func writeChecksum(dst, sum string) error {
	tmp := dst + checksumSuffix + partSuffix
	if err := os.WriteFile(tmp, []byte(sum+"  "+filepath.Base(dst)+"\n"), 0o644); err != nil {
		return fmt.Errorf("artifact cache: %w", err)
	}
	if err := os.Rename(tmp, dst+checksumSuffix); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("artifact cache: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("artifact cache: %w", err)
	}
	return nil
}

// fileSHA256 is the hex digest of the file at p.
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
