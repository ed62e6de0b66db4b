package zke

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest"
	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestParseFlannelLease(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		want      flannelLease
		err       string
	}{
		{"ipv4", "FLANNEL_NETWORK=10.42.0.0/16\nFLANNEL_SUBNET=10.42.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n",
			flannelLease{Subnet: netip.MustParsePrefix("10.42.1.0/24"), MTU: 1450}, ""},
		{"ipv6", "FLANNEL_IPV6_NETWORK=fd00:42::/56\nFLANNEL_IPV6_SUBNET=fd00:42:0:2::1/64\nFLANNEL_MTU=1430\n",
			flannelLease{Subnet: netip.MustParsePrefix("fd00:42:0:2::/64"), MTU: 1430}, ""},
		{"empty: flanneld has not started", "", flannelLease{}, "holds no subnet and MTU"},
		{"no MTU", "FLANNEL_SUBNET=10.42.1.1/24\n", flannelLease{}, "holds no subnet and MTU"},
		{"absurd MTU", "FLANNEL_SUBNET=10.42.1.1/24\nFLANNEL_MTU=12\n", flannelLease{}, "holds no subnet and MTU"},
		{"garbage", "FLANNEL_SUBNET=;reboot\nFLANNEL_MTU=1450\n", flannelLease{}, "holds no subnet and MTU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseFlannelLease(tc.env)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseFlannelLease = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestFlannelNetConf(t *testing.T) {
	for _, tc := range []struct {
		cidr, backend string
		want          map[string]any
	}{
		{"10.42.0.0/16", flannelBackendVXLAN, map[string]any{"Network": "10.42.0.0/16", "EnableIPv4": true}},
		{"10.42.0.0/16", flannelBackendHostGW, map[string]any{"Network": "10.42.0.0/16", "EnableIPv4": true}},
		{"fd00:42::/56", flannelBackendVXLAN, map[string]any{"IPv6Network": "fd00:42::/56", "EnableIPv6": true, "EnableIPv4": false}},
	} {
		s, err := flannelNetConf(tc.cidr, tc.backend)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(s), &got); err != nil {
			t.Fatalf("%s: not JSON: %v\n%s", tc.cidr, err, s)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.cidr, k, got[k], v)
			}
		}
		if b, _ := got["Backend"].(map[string]any); b["Type"] != tc.backend {
			t.Errorf("%s: backend %v, want %s", tc.cidr, got["Backend"], tc.backend)
		}
	}
	if _, err := flannelNetConf("10.42.0.0/99", flannelBackendVXLAN); err == nil || !strings.Contains(err.Error(), "clusterCidr") {
		t.Errorf("a bad CIDR: err = %v, want one naming clusterCidr", err)
	}
	if _, err := flannelNetConf("10.42.0.0/16", "udp"); err == nil {
		t.Error("a backend this build does not run was accepted")
	}
	for plugin, want := range map[string]string{model.PluginFlannel: flannelBackendVXLAN, model.PluginBridge: flannelBackendHostGW, model.PluginCalico: ""} {
		if got := flannelBackend(plugin); got != want {
			t.Errorf("plugin %s: backend %q, want %q", plugin, got, want)
		}
	}
}

// The DaemonSet runs the configured image on every node, in the host's
// network, on the interface of the node's address.
func TestFlannelDaemonSet(t *testing.T) {
	r := &run{images: map[string]string{model.ImageFlannel: "mirror.local/flannel:v0.28.10"}}
	ds := r.flannelDaemonSet(map[string]string{"app": flannelName})
	spec := ds.Spec.Template.Spec
	c := spec.Containers[0]
	if c.Image != "mirror.local/flannel:v0.28.10" || c.Command[0] != flanneldPath || !spec.HostNetwork {
		t.Errorf("container %s %v, hostNetwork %v", c.Image, c.Command, spec.HostNetwork)
	}
	if args := strings.Join(c.Args, " "); !strings.Contains(args, "--iface=$(HOST_IP)") || !strings.Contains(args, "--ip-masq") {
		t.Errorf("args %v: want --iface=$(HOST_IP) and --ip-masq (flanneld restores its rules after a reboot)", c.Args)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Operator != "Exists" || spec.Tolerations[0].Key != "" {
		t.Errorf("tolerations %v: want every taint tolerated", spec.Tolerations)
	}
	if !metaSelects(ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels) {
		t.Errorf("selector %v does not select the template's labels %v", ds.Spec.Selector.MatchLabels, ds.Spec.Template.Labels)
	}
	// flanneld reaches the API server as the kubelets do, not through
	// the kubernetes Service; with a shared endpoint, through it.
	r = testRun(t, testConfig(), nil)
	api := func() map[string]string {
		got := map[string]string{}
		for _, e := range r.flannelDaemonSet(nil).Spec.Template.Spec.Containers[0].Env {
			got[e.Name] = e.Value
		}
		return got
	}
	if got := api(); got["KUBERNETES_SERVICE_HOST"] != "10.0.0.1" || got["KUBERNETES_SERVICE_PORT"] != "6443" {
		t.Errorf("API server %s:%s, want the control-plane node's 10.0.0.1:6443", got["KUBERNETES_SERVICE_HOST"], got["KUBERNETES_SERVICE_PORT"])
	}
	r.cfg.ControlPlaneEndpoint = &model.ControlPlaneEndpoint{VIP: "10.0.0.100"}
	if got := api(); got["KUBERNETES_SERVICE_HOST"] != "10.0.0.100" || got["KUBERNETES_SERVICE_PORT"] != "8443" {
		t.Errorf("API server %s:%s, want the shared endpoint 10.0.0.100:8443", got["KUBERNETES_SERVICE_HOST"], got["KUBERNETES_SERVICE_PORT"])
	}
}

func metaSelects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// The bridge config takes the MTU it is given, and none when 0.
func TestBridgeCNIConfigMTU(t *testing.T) {
	with, err := bridgeCNIConfig("10.42.1.0/24", 1450)
	if err != nil || !strings.Contains(string(with), `"mtu": 1450`) {
		t.Errorf("with an MTU: %s %v", with, err)
	}
	without, err := bridgeCNIConfig("10.42.1.0/24", 0)
	if err != nil || strings.Contains(string(without), "mtu") {
		t.Errorf("without an MTU: %s %v", without, err)
	}
}

// verify finds flannel's objects stale when the DaemonSet runs another
// image or arguments, or net-conf.json differs, and current when they
// are what ensureFlannel writes.
func TestVerifyFlannelObjects(t *testing.T) {
	cfg := model.ClusterConfig{ClusterCIDR: "10.42.0.0/16", Network: model.Network{Plugin: model.PluginFlannel}}
	r := &run{cfg: cfg, images: map[string]string{model.ImageFlannel: flannelImage}}
	ctx := context.Background()
	cs := fake.NewSimpleClientset()
	kube := kubeclienttest.FromClientset(cs)
	if err := r.verifyFlannelObjects(ctx, kube); !errors.Is(err, errStale) {
		t.Fatalf("nothing deployed: %v, want stale", err)
	}
	if err := r.ensureFlannel(ctx, kube); err != nil {
		t.Fatal(err)
	}
	if err := r.verifyFlannelObjects(ctx, kube); err != nil {
		t.Fatalf("as deployed: %v", err)
	}
	newer := &run{cfg: cfg, images: map[string]string{model.ImageFlannel: "mirror.local/flannel:v0.28.11"}}
	if err := newer.verifyFlannelObjects(ctx, kube); !errors.Is(err, errStale) {
		t.Errorf("another image configured: %v, want stale", err)
	}
	iface := &run{cfg: cfg, images: r.images}
	iface.cfg.Network.Iface = "eth1"
	if err := iface.verifyFlannelObjects(ctx, kube); !errors.Is(err, errStale) {
		t.Errorf("another interface configured: %v, want stale", err)
	}
	other := &run{cfg: cfg, images: r.images}
	other.cfg.ClusterCIDR = "10.244.0.0/16"
	if err := other.verifyFlannelObjects(ctx, kube); !errors.Is(err, errStale) {
		t.Errorf("another pod network: %v, want stale", err)
	}
	fa, _ := r.networkFingerprint()
	fb, _ := newer.networkFingerprint()
	if fa == fb {
		t.Error("the network step's fingerprint does not follow flannel's image")
	}
}
