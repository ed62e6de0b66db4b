package main

import (
	"archive/tar"
	"slices"
	"testing"
)

// TestFlannelImage: flannel's image is upstream's name with flanneld where
// upstream's image has it, the iptables entries it is given, the
// directories flanneld uses, and busybox's shell.
func TestFlannelImage(t *testing.T) {
	iptables := []entry{
		file("usr/sbin/xtables-nft-multi", 0o755, "/usr/sbin/xtables-nft-multi"),
		symlink("usr/sbin/iptables", "xtables-nft-multi"),
		file("lib/x86_64-linux-gnu/libc.so.6", 0o755, "/lib/x86_64-linux-gnu/libc.so.6"),
	}
	img, err := flannelImage("/bin-dir", []string{"busybox", "cp", "sh"}, iptables, []string{"v1.37.2", "v1.36.3"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(img.tags, []string{"ghcr.io/flannel-io/flannel:v0.28.10"}) || img.file != "flannel.tar" {
		t.Errorf("image %s tagged %q, want flannel.tar tagged ghcr.io/flannel-io/flannel:v0.28.10", img.file, img.tags)
	}
	if !slices.Equal(img.entrypoint, []string{"/opt/bin/flanneld"}) {
		t.Errorf("entrypoint %q, want /opt/bin/flanneld", img.entrypoint)
	}
	byName := map[string]entry{}
	for _, e := range img.root {
		byName[e.name] = e
	}
	for name, want := range map[string]struct {
		typ byte
		src string
	}{
		"opt/bin/flanneld":               {tar.TypeReg, "/bin-dir/flanneld"},
		"opt/bin/install-conf":           {tar.TypeReg, "/bin-dir/install-conf"},
		"usr/sbin/xtables-nft-multi":     {tar.TypeReg, "/usr/sbin/xtables-nft-multi"},
		"usr/sbin/iptables":              {tar.TypeSymlink, ""},
		"bin/sh":                         {tar.TypeSymlink, ""},
		"run/flannel":                    {tar.TypeDir, ""},
		"etc/kube-flannel":               {tar.TypeDir, ""},
		"lib/x86_64-linux-gnu":           {tar.TypeDir, ""},
		"lib/x86_64-linux-gnu/libc.so.6": {tar.TypeReg, "/lib/x86_64-linux-gnu/libc.so.6"},
	} {
		e, ok := byName[name]
		if !ok || e.typ != want.typ || e.src != want.src {
			t.Errorf("/%s = %+v, want type %c from %q", name, e, want.typ, want.src)
		}
	}
}
