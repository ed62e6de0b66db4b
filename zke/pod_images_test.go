package zke

import "testing"

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
