package zke

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// TestImagesOf: the table's defaults per component; a config's own entry
// wins; the all-in-one "kubernetes" key of clusters created before the
// per-component keys runs every Kubernetes component without an entry of
// its own, and never etcd, CoreDNS or the load balancer; likewise the
// combined "loadbalancer" key of earlier releases runs haproxy and
// keepalived unless they have entries of their own.
func TestImagesOf(t *testing.T) {
	def := imageTable["v1.36.3"]
	with := func(overrides map[string]string) map[string]string {
		out := maps.Clone(def)
		maps.Copy(out, overrides)
		return out
	}
	const aio = "reg.local/zdnscloud/kubernetes:v1.36.3"
	tests := []struct {
		name   string
		images map[string]string
		want   map[string]string
	}{
		{"defaults", nil, def},
		{"one component", map[string]string{model.ImageKubeScheduler: "reg.local/sched:1"},
			with(map[string]string{model.ImageKubeScheduler: "reg.local/sched:1"})},
		{"all-in-one", map[string]string{model.ImageKubernetes: aio}, with(map[string]string{
			model.ImageKubeAPIServer: aio, model.ImageKubeControllerManager: aio, model.ImageKubeScheduler: aio,
			model.ImageKubeProxy: aio, model.ImageKubelet: aio})},
		{"all-in-one and etcd, as the old table had it", map[string]string{model.ImageKubernetes: aio, model.ImageEtcd: aio}, with(map[string]string{
			model.ImageKubeAPIServer: aio, model.ImageKubeControllerManager: aio, model.ImageKubeScheduler: aio,
			model.ImageKubeProxy: aio, model.ImageKubelet: aio, model.ImageEtcd: aio})},
		{"all-in-one with a per-component override", map[string]string{model.ImageKubernetes: aio, model.ImageKubeAPIServer: "reg.local/apiserver:1"},
			with(map[string]string{model.ImageKubeAPIServer: "reg.local/apiserver:1", model.ImageKubeControllerManager: aio,
				model.ImageKubeScheduler: aio, model.ImageKubeProxy: aio, model.ImageKubelet: aio})},
		{"the combined load balancer", map[string]string{model.ImageLoadBalancer: "zdnscloud/kube-lb:2.6.12"},
			with(map[string]string{model.ImageHAProxy: "zdnscloud/kube-lb:2.6.12", model.ImageKeepalived: "zdnscloud/kube-lb:2.6.12"})},
		{"the combined load balancer with haproxy of its own", map[string]string{model.ImageLoadBalancer: "zdnscloud/kube-lb:2.6.12", model.ImageHAProxy: "haproxy:3.2.9"},
			with(map[string]string{model.ImageHAProxy: "haproxy:3.2.9", model.ImageKeepalived: "zdnscloud/kube-lb:2.6.12"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := imagesOf(model.ClusterConfig{KubernetesVersion: "v1.36.3", Images: tt.images})
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("imagesOf = %v\nwant %v", got, tt.want)
			}
		})
	}
	if _, err := imagesOf(model.ClusterConfig{KubernetesVersion: "v1.20.0"}); err == nil {
		t.Error("an unknown version got images")
	}
}

// TestImageTableHasEveryComponent: each release names an image for every
// component zke runs, so that a lookup never yields "".
func TestImageTableHasEveryComponent(t *testing.T) {
	for version, images := range imageTable {
		for _, k := range model.ImageComponents() {
			if _, combined := model.CombinedImages()[k]; combined {
				continue
			}
			if images[k] == "" {
				t.Errorf("imageTable[%q] has no %s image", version, k)
			}
		}
	}
}

// TestImagesForRoles: each node gets the images of the components its
// roles run, and the specs run them.
func TestImagesForRoles(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	img := func(keys ...string) []string {
		var out []string
		for _, k := range keys {
			out = append(out, r.images[k])
		}
		slices.Sort(out)
		return out
	}
	want := map[string][]string{
		"n1": img(model.ImageEtcd, model.ImageKubeAPIServer, model.ImageKubeControllerManager, model.ImageKubeScheduler),
		"n2": img(model.ImageEtcd, model.ImageKubelet, model.ImageKubeProxy),
		"n3": img(model.ImageKubelet, model.ImageKubeProxy),
	}
	for _, n := range r.nodes {
		if got := r.imagesFor(n); !slices.Equal(got, want[n.Name]) {
			t.Errorf("imagesFor(%s) = %v, want %v", n.Name, got, want[n.Name])
		}
	}
	n1, n2 := r.nodes[0], r.nodes[1]
	for spec, key := range map[string]string{
		r.apiServerSpec(n1).Image: model.ImageKubeAPIServer, r.controllerManagerSpec(n1).Image: model.ImageKubeControllerManager,
		r.schedulerSpec(n1).Image: model.ImageKubeScheduler, r.kubeProxySpec(n2).Image: model.ImageKubeProxy,
		r.kubeletSpec(n2, nodeSocket{}).Image: model.ImageKubelet, r.etcdSpec(n1, "", "new").Image: model.ImageEtcd,
	} {
		if spec != r.images[key] {
			t.Errorf("a spec runs %s, want %s's image %s", spec, key, r.images[key])
		}
	}

	// The all-in-one image is listed once on a node that runs several
	// components from it.
	cfg := testConfig()
	cfg.Images = map[string]string{model.ImageKubernetes: "reg.local/kubernetes:1"}
	r = testRun(t, cfg, nil)
	if got := r.imagesFor(r.nodes[0]); !slices.Equal(got, []string{"reg.local/kubernetes:1", imageTable[cfg.KubernetesVersion][model.ImageEtcd]}) {
		t.Errorf("imagesFor(n1) with the all-in-one image = %v", got)
	}
}

// TestImageRepository moves the registry.k8s.io defaults, as kubeadm's
// imageRepository does (CoreDNS flattened), and nothing else.
func TestImageRepository(t *testing.T) {
	got, err := imagesOf(model.ClusterConfig{KubernetesVersion: "v1.36.3", ImageRepository: "mirror.local:5000/k8s",
		Images: map[string]string{model.ImageKubeScheduler: "registry.k8s.io/kube-scheduler:mine"}})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		model.ImageKubeAPIServer: "mirror.local:5000/k8s/kube-apiserver:v1.36.3",
		model.ImageEtcd:          "mirror.local:5000/k8s/etcd:" + strings.TrimPrefix(imageTable["v1.36.3"][model.ImageEtcd], "registry.k8s.io/etcd:"),
		model.ImageCoreDNS:       "mirror.local:5000/k8s/coredns:" + strings.TrimPrefix(imageTable["v1.36.3"][model.ImageCoreDNS], "registry.k8s.io/coredns/coredns:"),
		// An image given in the config stays as it is.
		model.ImageKubeScheduler: "registry.k8s.io/kube-scheduler:mine",
		// Another registry's image is not moved.
		model.ImageHAProxy: imageTable["v1.36.3"][model.ImageHAProxy],
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %q", k, got[k], want)
		}
	}
}

// A kept release is not offered for new clusters, but zke still knows its
// images and release files, for the clusters that run it.
func TestKeptVersionsStillRun(t *testing.T) {
	for _, v := range KeptVersions() {
		if slices.Contains(KubernetesVersions(), v) {
			t.Errorf("kept release %s is offered for new clusters", v)
		}
		if DefaultImages(v) == nil {
			t.Errorf("kept release %s has no images", v)
		}
		if _, err := ReleaseFiles(v, "amd64"); err != nil {
			t.Errorf("kept release %s: %v", v, err)
		}
	}
	if len(KubernetesVersions()) != 2 {
		t.Errorf("KubernetesVersions() = %v, want the two supported lines", KubernetesVersions())
	}
}
