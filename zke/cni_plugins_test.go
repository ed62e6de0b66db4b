package zke

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTgz writes a release-like tarball: each file at ./<name>.
func writeTgz(t *testing.T, p string, files map[string]string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755})
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: "./" + name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestExtractCNIPlugins(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cni-plugins-linux-amd64-v1.9.0.tgz")
	writeTgz(t, p, map[string]string{"bridge": "B", "host-local": "H", "vlan": "V", "loopback": "L"})
	got, err := extractCNIPlugins(p, []string{"bridge", "loopback"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("B"))
	if len(got) != 2 || got[0].name != "bridge" || string(got[0].data) != "B" || got[0].sha256 != hex.EncodeToString(sum[:]) || got[1].name != "loopback" {
		t.Fatalf("extracted %+v", got)
	}
	if _, err := extractCNIPlugins(p, []string{"bridge", "portmap"}); err == nil || !strings.Contains(err.Error(), `no plugin "portmap"`) {
		t.Errorf("a missing plugin: %v", err)
	}
}

// TestCNIPluginProbeScript runs the install probe with sh: a plugin is
// found as an executable file in any directory; the first directory's
// entry that is something else is occupied (never overwritten).
func TestCNIPluginProbeScript(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "it's a"), filepath.Join(base, "b")
	for _, d := range []string{a, b, filepath.Join(a, "loopback")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, mode := range map[string]os.FileMode{filepath.Join(a, "bridge"): 0o755, filepath.Join(b, "host-local"): 0o755, filepath.Join(a, "portmap"): 0o644} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", cniPluginProbeScript([]string{"bridge", "host-local", "portmap", "loopback", "tuning"}, []string{a, b})).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := parseCNIPluginProbe(string(out))
	want := map[string]cniPluginState{"bridge": {foundIn: a}, "host-local": {foundIn: b}, "portmap": {occupied: true}, "loopback": {occupied: true}, "tuning": {}}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: got %+v (reported %v), want %+v; output:\n%s", name, g, ok, w, out)
		}
	}
}

func TestIsCNIPluginPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/opt/cni/bin/bridge": true, "/usr/lib/cni/host-local": true, "/opt/cni/bin/vlan": false,
		"/bridge": false, "opt/cni/bin/bridge": false, "/opt/cni/../bin/bridge": false, "/etc/passwd": false,
	} {
		if got := isCNIPluginPath(p); got != want {
			t.Errorf("isCNIPluginPath(%q) = %v, want %v", p, got, want)
		}
		if got := isZkePath(p); got != want && want {
			t.Errorf("isZkePath(%q) = %v, want true", p, got)
		}
	}
}
