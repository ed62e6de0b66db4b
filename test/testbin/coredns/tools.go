//go:build tools

// Package tools pins the CoreDNS that zke deploys in the testbed's clusters:
// v1.14.6, the version zke's default image for Kubernetes v1.37 names (the
// image carries v1.14.2's tag too, for v1.36, over the same build). It is
// its own module so that CoreDNS's dependency graph stays out of
// singlecloud's.
package tools

import _ "github.com/coredns/coredns"
