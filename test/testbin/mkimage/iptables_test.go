package main

import (
	"archive/tar"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseLdd(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		headers bool
		want    []string
		wantErr string
	}{
		{
			name: "one file",
			out: "\tlinux-vdso.so.1 (0x00007ffd)\n" +
				"\tlibxtables.so.12 => /lib/x86_64-linux-gnu/libxtables.so.12 (0x00007f79)\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f79)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x00007f79)\n",
			want: []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libxtables.so.12", "/lib64/ld-linux-x86-64.so.2"},
		},
		{
			name:    "several files share libraries",
			headers: true,
			out: "/usr/sbin/xtables-nft-multi:\n" +
				"\tlibmnl.so.0 => /lib/x86_64-linux-gnu/libmnl.so.0 (0x1)\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x3)\n" +
				"/usr/lib/x86_64-linux-gnu/xtables/libxt_conntrack.so:\n" +
				"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\n" +
				"\t/lib64/ld-linux-x86-64.so.2 (0x3)\n",
			want: []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libmnl.so.0", "/lib64/ld-linux-x86-64.so.2"},
		},
		{
			name:    "static file",
			headers: true,
			out:     "/bin/busybox:\n\tnot a dynamic executable\n",
			want:    []string{},
		},
		{
			name:    "missing library names the file",
			headers: true,
			out:     "/usr/sbin/xtables-nft-multi:\n\tlibnftnl.so.11 => not found\n",
			wantErr: "/usr/sbin/xtables-nft-multi needs libnftnl.so.11",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseLdd(tt.out, tt.headers)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseLdd error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("parseLdd = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCompleteTree(t *testing.T) {
	tests := []struct {
		name    string
		in      []entry
		want    []string // names of added directories, in order
		wantErr bool
	}{
		{
			name: "adds missing parents once",
			in:   []entry{dir("usr", 0o755), file("usr/lib/x/a.so", 0o644, "a"), file("usr/lib/x/b.so", 0o644, "b"), symlink("lib64/ld.so", "x")},
			want: []string{"usr/lib/x", "usr/lib", "lib64"},
		},
		{
			name: "nothing missing",
			in:   []entry{dir("bin", 0o755), symlink("bin/sh", "busybox")},
		},
		{
			name:    "duplicate name",
			in:      []entry{dir("run", 0o755), dir("run", 0o755)},
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := completeTree(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatal("completeTree accepted a duplicate entry")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var added []string
			for _, e := range got[len(tt.in):] {
				if e.typ != tar.TypeDir || e.mode != 0o755 {
					t.Errorf("added %+v, want a 0755 directory", e)
				}
				added = append(added, e.name)
			}
			if !slices.Equal(added, tt.want) {
				t.Errorf("added directories %q, want %q", added, tt.want)
			}
		})
	}
}

// TestIptablesRoot reads this machine's iptables package, as make testbin
// does.
func TestIptablesRoot(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/xtables-nft-multi"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("iptables is not installed: %v", err)
		}
		t.Skip("iptables is not installed: apt-get install iptables")
	}
	root, err := iptablesRoot("/usr/sbin", "/usr/lib/x86_64-linux-gnu/xtables")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]entry{}
	for _, e := range root {
		byName[e.name] = e
	}
	for name, link := range map[string]string{
		"usr/sbin/iptables":             "xtables-nft-multi",
		"usr/sbin/ip6tables-restore":    "xtables-nft-multi",
		"usr/sbin/iptables-legacy-save": "xtables-legacy-multi",
	} {
		if e, ok := byName[name]; !ok || e.typ != tar.TypeSymlink || e.link != link {
			t.Errorf("/%s = %+v, want a link to %s", name, e, link)
		}
	}
	for _, name := range []string{
		"usr/sbin/xtables-nft-multi", "lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6",
		"lib/x86_64-linux-gnu/libnftnl.so.11", "usr/lib/x86_64-linux-gnu/xtables/libxt_conntrack.so",
		"lib/x86_64-linux-gnu/libnetfilter_conntrack.so.3", // needed by a module, not by the binaries
	} {
		if e, ok := byName[name]; !ok || e.typ != tar.TypeReg {
			t.Errorf("/%s missing or not a file: %+v", name, e)
		}
	}
	if e := byName["usr/lib/x86_64-linux-gnu/xtables/libxt_MASQUERADE.so"]; e.typ != tar.TypeSymlink {
		t.Errorf("libxt_MASQUERADE.so = %+v, want the package's link kept", e)
	}
	if _, err := completeTree(root); err != nil {
		t.Fatal(err)
	}
}
