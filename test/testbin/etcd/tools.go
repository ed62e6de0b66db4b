//go:build tools

// Package tools pins the etcd v3.7 server, etcdctl and etcdutl that the
// testbed runs and the etcd image holds. It is its own module so that
// etcd's dependency graph stays out of singlecloud's.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
