//go:build tools

// Package tools pins the Kubernetes v1.37.2 commands that the testbed runs.
// It is its own module so that k8s.io/kubernetes stays out of singlecloud's graph.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
