//go:build tools

// Package tools pins containerd v2.4.2, the containerd 2 that testbed hosts
// with HostOptions.Containerd2 run instead of Debian's 1.6: the testbin
// builds containerd, ctr and containerd-shim-runc-v2 from it into
// containerd2/bin. It is its own module so that containerd's dependency
// graph stays out of singlecloud's.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
