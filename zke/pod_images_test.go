package zke

import (
	"slices"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestContainerdRef(t *testing.T) {
	tests := []struct{ in, want string }{
		{"busybox", "docker.io/library/busybox:latest"},
		{"busybox:1", "docker.io/library/busybox:1"},
		{"coredns/coredns:1.12.1", "docker.io/coredns/coredns:1.12.1"},
		{"registry.k8s.io/coredns/coredns:v1.12.1", "registry.k8s.io/coredns/coredns:v1.12.1"},
		{"localhost/img", "localhost/img:latest"},
		{"reg.example:5000/team/img", "reg.example:5000/team/img:latest"},
		{"reg.example:5000/team/img:2", "reg.example:5000/team/img:2"},
		{"singlecloud.test/busybox:1", "singlecloud.test/busybox:1"},
		{"img@sha256:0123", "docker.io/library/img@sha256:0123"},
	}
	for _, tt := range tests {
		if got := containerdRef(tt.in); got != tt.want {
			t.Errorf("containerdRef(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A worker's containerd gets the pod images, flannel's on a flannel
// cluster, and the sandbox image its containerd said it runs pods in.
func TestPodImagesOf(t *testing.T) {
	r := &run{
		cfg:    model.ClusterConfig{Network: model.Network{Plugin: model.PluginFlannel}},
		images: map[string]string{model.ImageCoreDNS: "registry.k8s.io/coredns/coredns:v1.14.2", model.ImageFlannel: flannelImage},
		facts: map[string]nodeFacts{
			"w1": {cri: criFacts{sandboxImage: "registry.k8s.io/pause:3.6"}},
			"w2": {cri: criFacts{sandboxImage: flannelImage}},
		},
	}
	for _, tc := range []struct {
		node string
		want []string
	}{
		{"w1", []string{"registry.k8s.io/coredns/coredns:v1.14.2", flannelImage, "registry.k8s.io/pause:3.6"}},
		{"w2", []string{"registry.k8s.io/coredns/coredns:v1.14.2", flannelImage}},
		{"w3", []string{"registry.k8s.io/coredns/coredns:v1.14.2", flannelImage}},
	} {
		if got := r.podImagesOf(node{Node: model.Node{Name: tc.node}}); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.node, got, tc.want)
		}
	}
}
