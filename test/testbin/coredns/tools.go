//go:build tools

// Package tools pins the CoreDNS that zke deploys in the testbed's clusters
// (the version zke's image table names). It is its own module so that
// CoreDNS's dependency graph stays out of singlecloud's.
package tools

import _ "github.com/coredns/coredns"
