//go:build tools

// Package tools pins the flannel whose image zke deploys as its VXLAN
// network: v0.28.10, the tag of zke's default flannel image
// (ghcr.io/flannel-io/flannel:v0.28.10). The testbin builds flanneld and
// install-conf (the DaemonSet's init container, which installs the CNI
// configuration) from it. It is its own module so that flannel's
// dependency graph stays out of singlecloud's.
package tools

import (
	_ "github.com/flannel-io/flannel"
	_ "github.com/flannel-io/flannel/cmd/install_conf"
)
