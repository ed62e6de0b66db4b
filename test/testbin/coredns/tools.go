//go:build tools

// Package tools pins the CoreDNS that zke deploys in the testbed's clusters:
// v1.14.2, the version zke's default image for Kubernetes v1.36 names (the
// image carries v1.13.1's tag too, for v1.35, over the same build). It is
// its own module so that CoreDNS's dependency graph stays out of
// singlecloud's.
package tools

import _ "github.com/coredns/coredns"
