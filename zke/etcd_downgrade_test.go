package zke

import "testing"

func TestEtcdImageMinor(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  etcdMinor
		ok    bool
	}{
		{"registry.k8s.io/etcd:3.7.0-0", etcdMinor{3, 7}, true},
		{"registry.k8s.io/etcd:3.6.8-0", etcdMinor{3, 6}, true},
		{"quay.io/coreos/etcd:v3.5.21", etcdMinor{3, 5}, true},
		{"mirror.local:5000/etcd:3.6.8-0", etcdMinor{3, 6}, true},
		{"mirror.local:5000/etcd", etcdMinor{}, false},
		{"registry.k8s.io/etcd:latest", etcdMinor{}, false},
		{"registry.k8s.io/etcd@sha256:0123", etcdMinor{}, false},
		{"registry.k8s.io/etcd:3.6.8-0@sha256:0123", etcdMinor{}, false},
		{"etcd", etcdMinor{}, false},
	} {
		got, ok := etcdImageMinor(tc.image)
		if got != tc.want || ok != tc.ok {
			t.Errorf("etcdImageMinor(%q) = %v, %v; want %v, %v", tc.image, got, ok, tc.want, tc.ok)
		}
	}
	if !(etcdMinor{3, 6}).less(etcdMinor{3, 7}) || (etcdMinor{3, 7}).less(etcdMinor{3, 7}) || !(etcdMinor{2, 9}).less(etcdMinor{3, 0}) {
		t.Error("etcdMinor.less")
	}
}
