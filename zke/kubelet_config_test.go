package zke

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// TestKubeletConfig decodes what kubeletConfig writes and checks every
// value, including hostile ones that validation would refuse: each stays
// one value of its key, and no key is added.
func TestKubeletConfig(t *testing.T) {
	cfg := model.ClusterConfig{ClusterDomain: "cluster.local", ClusterDNSServiceIP: "10.43.0.10"}
	tests := []struct {
		name           string
		node           model.Node
		wantCgroupRoot string
		wantRuntime    string
		wantCA         string
	}{
		{"defaults", model.Node{Name: "w1", Address: "10.0.0.1"}, "/", "unix:///run/containerd/containerd.sock", "/etc/kubernetes/ssl/kube-ca.pem"},
		{"prefix and cgroupRoot", model.Node{Name: "w1", Address: "10.0.0.1", PrefixPath: "/opt/zke", Kubelet: model.KubeletOverrides{CgroupRoot: "/zke-w1"}},
			"/zke-w1", "unix:///run/containerd/containerd.sock", "/opt/zke/etc/kubernetes/ssl/kube-ca.pem"},
		{"cgroupRoot injecting a key", model.Node{Name: "w1", Address: "10.0.0.1", Kubelet: model.KubeletOverrides{CgroupRoot: "/zke\nstaticPodPath: /etc/kubernetes/manifests"}},
			"/zke\nstaticPodPath: /etc/kubernetes/manifests", "unix:///run/containerd/containerd.sock", "/etc/kubernetes/ssl/kube-ca.pem"},
		{"socket injecting a document", model.Node{Name: "w1", Address: "10.0.0.1", ContainerdSocket: "/run/c.sock\n---\nkind: Evil"},
			"/", "unix:///run/c.sock\n---\nkind: Evil", "/etc/kubernetes/ssl/kube-ca.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nodesOf(model.ClusterConfig{Nodes: []model.Node{tt.node}})[0]
			out, err := kubeletConfig(n, cfg, "", etcResolvConf)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(out), "\n---") != 0 {
				t.Fatalf("more than one YAML document:\n%s", out)
			}
			var got kubeletConfiguration
			if err := yaml.UnmarshalStrict(out, &got); err != nil {
				t.Fatalf("decode: %v\n%s", err, out)
			}
			var keys map[string]any
			if err := yaml.Unmarshal(out, &keys); err != nil {
				t.Fatal(err)
			}
			if len(keys) != 24 {
				t.Errorf("%d top-level keys, want 24:\n%s", len(keys), out)
			}
			checks := []struct{ what, got, want string }{
				{"kind", got.Kind, "KubeletConfiguration"},
				{"apiVersion", got.APIVersion, "kubelet.config.k8s.io/v1beta1"},
				{"address", got.Address, "10.0.0.1"},
				{"cgroupRoot", got.CgroupRoot, tt.wantCgroupRoot},
				{"cgroupDriver", got.CgroupDriver, "cgroupfs"},
				{"containerRuntimeEndpoint", got.ContainerRuntimeEndpoint, tt.wantRuntime},
				{"clientCAFile", got.Authentication.X509.ClientCAFile, tt.wantCA},
				{"staticPodPath", got.StaticPodPath, ""},
				{"authorization.mode", got.Authorization.Mode, "Webhook"},
				{"clusterDNS", strings.Join(got.ClusterDNS, ","), "10.43.0.10"},
				{"nodefs.available", got.EvictionHard["nodefs.available"], "1%"},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
			if got.Port != portKubelet || got.ReadOnlyPort != 0 || got.Authentication.Anonymous.Enabled || !got.Authentication.Webhook.Enabled ||
				got.FailSwapOn || !got.CgroupsPerQOS || got.SerializeImagePulls {
				t.Errorf("unexpected settings: %+v", got)
			}
		})
	}
}

func TestBridgeCNIConfig(t *testing.T) {
	for _, cidr := range []string{"10.42.1.0/24", `10.42.1.0/24"}],[{"subnet":"0.0.0.0/0`} {
		out, err := bridgeCNIConfig(cidr, 0)
		if err != nil {
			t.Fatal(err)
		}
		var conf struct {
			Name    string `json:"name"`
			Plugins []struct {
				Type string `json:"type"`
				IPAM struct {
					Ranges [][]struct {
						Subnet string `json:"subnet"`
					} `json:"ranges"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal(out, &conf); err != nil {
			t.Fatalf("decode: %v\n%s", err, out)
		}
		if conf.Name != "zke-bridge" || len(conf.Plugins) != 3 || conf.Plugins[0].Type != "bridge" ||
			len(conf.Plugins[0].IPAM.Ranges) != 1 || len(conf.Plugins[0].IPAM.Ranges[0]) != 1 || conf.Plugins[0].IPAM.Ranges[0][0].Subnet != cidr {
			t.Errorf("config for %q:\n%s", cidr, out)
		}
	}
}
