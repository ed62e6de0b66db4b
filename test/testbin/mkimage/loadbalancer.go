package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// The shared API endpoint's two images, under the names zke deploys them
// by default (zke.DefaultImages): Docker's official haproxy image and
// osixia's keepalived. Each holds Debian's build of its program where the
// upstream image has it (/usr/local/sbin), with the shared libraries it
// needs and busybox; haproxy's, like the official one, runs as the
// unprivileged user haproxy (uid 99) and stops on SIGUSR1.
const (
	haproxyArchive    = "haproxy.tar"
	keepalivedArchive = "keepalived.tar"
	haproxyUID        = "99"
)

// loadBalancerImages returns the haproxy and keepalived images, tagged as
// zke's default of each of versions, with Debian's programs from sbinDir
// and the busybox tree base.
func loadBalancerImages(sbinDir string, versions []string, base []entry) ([]image, error) {
	haproxyTags, err := defaultTags(model.ImageHAProxy, versions)
	if err != nil {
		return nil, err
	}
	keepalivedTags, err := defaultTags(model.ImageKeepalived, versions)
	if err != nil {
		return nil, err
	}
	haproxyRoot, err := programRoot(sbinDir, "haproxy", withoutAccounts(base),
		data("etc/passwd", 0o644, passwd+"haproxy:x:"+haproxyUID+":"+haproxyUID+"::/var/lib/haproxy:/usr/sbin/nologin\n"),
		data("etc/group", 0o644, group+"haproxy:x:"+haproxyUID+":\n"),
		dir("usr/local/etc/haproxy", 0o755), dir("var/lib/haproxy", 0o755))
	if err != nil {
		return nil, err
	}
	keepalivedRoot, err := programRoot(sbinDir, "keepalived", base, dir("etc/keepalived", 0o755))
	if err != nil {
		return nil, err
	}
	return []image{
		{file: haproxyArchive, tags: haproxyTags, user: "haproxy", stopSignal: "SIGUSR1", workingDir: "/var/lib/haproxy",
			cmd: []string{"haproxy", "-f", "/usr/local/etc/haproxy/haproxy.cfg"}, root: haproxyRoot},
		{file: keepalivedArchive, tags: keepalivedTags, cmd: []string{"keepalived", "--dont-fork", "--log-console"}, root: keepalivedRoot},
	}, nil
}

// withoutAccounts is base without its passwd and group, for an image that
// writes its own.
func withoutAccounts(base []entry) []entry {
	var out []entry
	for _, e := range base {
		if e.name != "etc/passwd" && e.name != "etc/group" {
			out = append(out, e)
		}
	}
	return out
}

// programRoot is base plus Debian's program from sbinDir at
// /usr/local/sbin, every shared library it needs at the path the loader
// resolved it to, /run, and extra.
func programRoot(sbinDir, program string, base []entry, extra ...entry) ([]entry, error) {
	src := filepath.Join(sbinDir, program)
	if _, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("%s not found in %s: apt-get install haproxy keepalived and rerun make testbin", program, sbinDir)
	}
	libs, err := sharedLibraries([]string{src})
	if err != nil {
		return nil, err
	}
	root := append(append([]entry(nil), base...), dir("run", 0o755), dir("usr/local/sbin", 0o755), file("usr/local/sbin/"+program, 0o755, src))
	for _, l := range libs {
		root = append(root, file(strings.TrimPrefix(l, "/"), 0o755, l))
	}
	tree, err := completeTree(append(root, extra...))
	if err != nil {
		return nil, fmt.Errorf("image of %s: %w", program, err)
	}
	return tree, nil
}
