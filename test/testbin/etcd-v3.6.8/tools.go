//go:build tools

// Package tools pins etcd v3.6.8 (server, etcdctl and etcdutl), the etcd
// of the previous Kubernetes release's default image (registry.k8s.io/
// etcd:3.6.8-0), so that the upgrade test moves etcd up a minor release and
// its revert takes it down again, as a real cluster's would. It is its own
// module so that etcd's dependency graph stays out of singlecloud's.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
