//go:build tools

// Package tools pins the etcd v3.5 server that the testbed runs. It is its own
// module so that etcd's dependency graph stays out of singlecloud's.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
