package main

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/artifacts"
)

func TestArtifactsList(t *testing.T) {
	code, out, errs := runCmd(t, nil, "artifacts", "list", "--version", "v1.36.3", "--image-repository", "mirror.local:5000/k8s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"mirror.local:5000/k8s/kube-apiserver:v1.36.3", "mirror.local:5000/k8s/coredns:", "debian:bookworm-slim",
		"https://dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet.sha256", "cni-plugins-linux-amd64-"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the list lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range [][]string{{"artifacts"}, {"artifacts", "list", "--version", "v1.20.0"}, {"artifacts", "list", "--arch", "s390x"},
		{"artifacts", "list", "--image-repository", "reg.example.com/k8s:v1"}, {"artifacts", "fetch"}} {
		if code, _, errs := runCmd(t, nil, bad...); code != 2 {
			t.Errorf("%q: exit %d (%s), want 2", bad, code, errs)
		}
	}
}

// TestArtifactsFetch fetches a release's files from a mirror on loopback
// into a directory laid out as a mirror; a tampered file fails naming both
// sums and is not kept.
func TestArtifactsFetch(t *testing.T) {
	served := t.TempDir()
	files, err := zke.ReleaseFiles("v1.36.3", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	publish := func(content string) { publishReleaseFiles(t, served, files, content) }
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer srv.Close()

	publish("tampered")
	dir := filepath.Join(t.TempDir(), "mirror")
	code, _, errs := runCmd(t, nil, "artifacts", "fetch", "--version", "v1.36.3", "--dir", dir, "--artifact-mirror", srv.URL+"/")
	if code != 1 || !strings.Contains(errs, "kubelet") || !strings.Contains(errs, "published checksum") {
		t.Fatalf("fetch of a tampered kubelet: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "dl.k8s.io/release/v1.36.3/bin/linux/amd64/kubelet")); err == nil {
		t.Error("the tampered kubelet was kept")
	}

	publish("")
	code, out, errs := runCmd(t, nil, "artifacts", "fetch", "--version", "v1.36.3", "--dir", dir, "--artifact-mirror", srv.URL+"/")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range files {
		p := filepath.Join(dir, strings.TrimPrefix(f.URL, "https://"))
		if b, err := os.ReadFile(p); err != nil || string(b) != f.Name() {
			t.Errorf("%s: %q, %v", p, b, err)
		}
		if _, err := os.Stat(p + ".sha256"); err != nil {
			t.Errorf("no checksum beside %s: %v", p, err)
		}
	}
	if !strings.Contains(string(out), "SHA-256 as published") {
		t.Errorf("output: %s", out)
	}
}

// publishReleaseFiles lays files out under dir as a mirror serves them:
// each holds its name plus extra, beside a checksum of its name alone (so
// a non-empty extra is a tampered file).
func publishReleaseFiles(t *testing.T, dir string, files []artifacts.File, extra string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, strings.TrimPrefix(f.URL, "https://"))
		sum := sha256.Sum256([]byte(f.Name()))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.Name()+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+".sha256", []byte(hex.EncodeToString(sum[:])+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
