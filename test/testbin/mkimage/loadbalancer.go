package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// loadBalancerBinaries are the Debian programs of the kube-lb image: the
// control plane's shared endpoint is a virtual IP that keepalived moves
// between the control-plane nodes, in front of an haproxy on each.
func loadBalancerBinaries() []string { return []string{"haproxy", "keepalived"} }

// loadBalancerRoot copies Debian's haproxy and keepalived from sbinDir into
// the image under /usr/sbin, with every shared library they need at the
// path the loader resolved it to, and the directories they write at run
// time.
func loadBalancerRoot(sbinDir string) ([]entry, error) {
	root := []entry{dir("run", 0o755), dir("usr/sbin", 0o755), dir("etc/keepalived", 0o755), dir("var/lib/haproxy", 0o755)}
	var srcs []string
	for _, b := range loadBalancerBinaries() {
		src := filepath.Join(sbinDir, b)
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("%s not found in %s: apt-get install haproxy keepalived and rerun make testbin", b, sbinDir)
		}
		root = append(root, file("usr/sbin/"+b, 0o755, src))
		srcs = append(srcs, src)
	}
	libs, err := sharedLibraries(srcs)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		root = append(root, file(strings.TrimPrefix(l, "/"), 0o755, l))
	}
	return root, nil
}
