package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const upstream = "https://github.com/containernetworking/plugins/releases/download/v1.9.0/cni-plugins-linux-amd64-v1.9.0.tgz"

var testFile = File{URL: upstream, ChecksumURL: upstream + ".sha256"}

// mirror serves dir over HTTP on loopback and counts the requests.
func mirror(t *testing.T, dir string) (string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	fs := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fs.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mirror/", &hits
}

// publish puts content and the checksum sum (its own when sum is "")
// under dir/mirror as a mirror of upstream.
func publish(t *testing.T, dir string, content []byte, sum string) {
	t.Helper()
	if sum == "" {
		d := sha256.Sum256(content)
		sum = hex.EncodeToString(d[:])
	}
	p := filepath.Join(dir, "mirror", "github.com/containernetworking/plugins/releases/download/v1.9.0/cni-plugins-linux-amd64-v1.9.0.tgz")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".sha256", []byte(sum+"  cni-plugins-linux-amd64-v1.9.0.tgz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFetchVerifiesAndCaches(t *testing.T) {
	served := t.TempDir()
	publish(t, served, []byte("the plugins"), "")
	m, hits := mirror(t, served)
	c, err := New(filepath.Join(t.TempDir(), "cache"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Fetch(context.Background(), testFile, m)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(got.Path); string(b) != "the plugins" || got.Source == "" {
		t.Fatalf("fetched %+v holding %q", got, b)
	}
	if !strings.HasSuffix(got.Path, "github.com/containernetworking/plugins/releases/download/v1.9.0/cni-plugins-linux-amd64-v1.9.0.tgz") {
		t.Errorf("cached at %s, want the upstream host and path under the cache", got.Path)
	}
	before := hits.Load()
	again, err := c.Fetch(context.Background(), testFile, m)
	if err != nil || again.SHA256 != got.SHA256 || again.Source != "" {
		t.Fatalf("second fetch: %+v, %v", again, err)
	}
	if hits.Load() != before {
		t.Errorf("the second fetch asked the mirror again (%d requests), want the cache", hits.Load()-before)
	}
	// A cached file changed on disk is not trusted: fetched again.
	if err := os.WriteFile(got.Path, []byte("rotten"), 0o644); err != nil {
		t.Fatal(err)
	}
	if third, err := c.Fetch(context.Background(), testFile, m); err != nil || third.Source == "" {
		t.Fatalf("fetch after the cache rotted: %+v, %v (want a download)", third, err)
	}
}

func TestFetchRefusesATamperedFile(t *testing.T) {
	served := t.TempDir()
	good := sha256.Sum256([]byte("the plugins"))
	publish(t, served, []byte("the plugins, tampered"), hex.EncodeToString(good[:]))
	m, _ := mirror(t, served)
	c, err := New(filepath.Join(t.TempDir(), "cache"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Fetch(context.Background(), testFile, m)
	var ce *ChecksumError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) {
		t.Fatalf("fetch of a tampered file: %v, want a *ChecksumError", err)
	}
	bad := sha256.Sum256([]byte("the plugins, tampered"))
	for _, want := range []string{"cni-plugins-linux-amd64-v1.9.0.tgz", hex.EncodeToString(good[:]), hex.EncodeToString(bad[:])} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
	var files []string
	filepath.WalkDir(c.Dir(), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Errorf("a tampered download left %v in the cache", files)
	}
}

func TestFetchErrors(t *testing.T) {
	served := t.TempDir()
	m, _ := mirror(t, served)
	c, err := New(filepath.Join(t.TempDir(), "cache"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fetch(context.Background(), testFile, m); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "artifactMirror") {
		t.Errorf("fetch from a mirror without the file: %v, want ErrNotFound with a hint", err)
	}
	publish(t, served, []byte("x"), "not-a-digest")
	if _, err := c.Fetch(context.Background(), testFile, m); err == nil || !strings.Contains(err.Error(), "SHA-256 hex digest") {
		t.Errorf("fetch with a malformed checksum: %v", err)
	}
	if _, err := New("relative/dir", nil); err == nil {
		t.Error("New accepted a relative directory")
	}
}

func TestSourceURL(t *testing.T) {
	for _, tc := range []struct{ mirror, upstream, want string }{
		{"", upstream, upstream},
		{"http://10.0.0.1:8080/", upstream, "http://10.0.0.1:8080/github.com/containernetworking/plugins/releases/download/v1.9.0/cni-plugins-linux-amd64-v1.9.0.tgz"},
		{"https://files.example.com/mirror", "https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet", "https://files.example.com/mirror/dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet"},
		{"", "http://dl.k8s.io/kubelet", ""},
		{"", "https://dl.k8s.io/../../etc/passwd", ""},
		{"", "https://dl.k8s.io/dir/", ""},
	} {
		got, err := SourceURL(tc.mirror, tc.upstream)
		if tc.want == "" {
			if err == nil {
				t.Errorf("SourceURL(%q, %q) = %q, want an error", tc.mirror, tc.upstream, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SourceURL(%q, %q) = %q, %v; want %q", tc.mirror, tc.upstream, got, err, tc.want)
		}
	}
}
