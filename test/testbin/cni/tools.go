//go:build tools

// Package tools pins the containernetworking/plugins release whose
// plugins zke installs (zke's cniPluginsVersion). The testbin builds them
// and packs them as that release's tarball, with its .sha256, in the file
// mirror the tests serve to singlecloud (--artifact-mirror). It is its own
// module so that the plugins' dependency graph stays out of singlecloud's.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
