package model

import (
	"reflect"
	"slices"
	"testing"
)

// defaulted is the config an empty request becomes.
func defaulted() ClusterConfig {
	return ClusterConfig{
		SSHPort:             DefaultSSHPort,
		ClusterDomain:       DefaultClusterDomain,
		ClusterCIDR:         DefaultClusterCIDR,
		ServiceCIDR:         DefaultServiceCIDR,
		ClusterDNSServiceIP: DefaultClusterDNSServiceIP,
		Network:             Network{Plugin: DefaultNetworkPlugin},
		KubernetesVersion:   DefaultKubernetesVersion,
	}
}

// defaultedNode is the node {name, address} of a cluster whose sshUser and
// sshPort are user and port, after ApplyDefaults.
func defaultedNode(name, address, user string, port Port) Node {
	return Node{
		Name: name, Address: address, InternalAddress: address, SSHPort: port, SSHUser: user,
		DockerSocket: DefaultDockerSocket, ContainerdSocket: DefaultContainerdSocket, PrefixPath: DefaultPrefixPath,
	}
}

func TestClusterConfigApplyDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   ClusterConfig
		want func() ClusterConfig
	}{
		{
			name: "empty config gets every default",
			in:   ClusterConfig{},
			want: defaulted,
		},
		{
			name: "defaults have the documented values",
			in:   ClusterConfig{},
			want: func() ClusterConfig {
				return ClusterConfig{
					SSHPort:             22,
					ClusterDomain:       "cluster.local",
					ClusterCIDR:         "10.42.0.0/16",
					ServiceCIDR:         "10.43.0.0/16",
					ClusterDNSServiceIP: "10.43.0.10",
					Network:             Network{Plugin: "flannel"},
					KubernetesVersion:   "v1.37.2",
				}
			},
		},
		{
			name: "white-space-only fields count as empty",
			in: ClusterConfig{
				ClusterDomain: "  ", ClusterCIDR: "\t", ServiceCIDR: "\n", ClusterDNSServiceIP: " ",
				Network: Network{Plugin: " "}, KubernetesVersion: " ",
			},
			want: defaulted,
		},
		{
			name: "explicit values are kept, trimmed",
			in: ClusterConfig{
				Name:                " prod ",
				SSHUser:             " root\n",
				SSHKey:              "\n-----BEGIN KEY-----\nabc\n-----END KEY-----\n",
				SSHPort:             2222,
				SingleCloudAddress:  " 10.0.0.9:8088 ",
				ClusterDomain:       " corp.local ",
				ClusterCIDR:         " 10.50.0.0/16",
				ServiceCIDR:         "10.51.0.0/16 ",
				ClusterDNSServiceIP: " 10.51.0.10 ",
				ClusterUpstreamDNS:  []string{" 8.8.8.8 ", "1.1.1.1"},
				Network:             Network{Plugin: " Calico ", Iface: " eth1 "},
				PrivateRegistries: []PrivateRegistry{{
					URL: " reg.local:5000 ", User: " bob ", Password: " s3cret ", CACert: " PEM ",
				}},
				KubernetesVersion: " v1.35.0 ",
			},
			want: func() ClusterConfig {
				return ClusterConfig{
					Name:                "prod",
					SSHUser:             "root",
					SSHKey:              "-----BEGIN KEY-----\nabc\n-----END KEY-----",
					SSHPort:             2222,
					SingleCloudAddress:  "10.0.0.9:8088",
					ClusterDomain:       "corp.local",
					ClusterCIDR:         "10.50.0.0/16",
					ServiceCIDR:         "10.51.0.0/16",
					ClusterDNSServiceIP: "10.51.0.10",
					ClusterUpstreamDNS:  []string{"8.8.8.8", "1.1.1.1"},
					Network:             Network{Plugin: "calico", Iface: "eth1"},
					PrivateRegistries: []PrivateRegistry{{
						URL: "reg.local:5000", User: "bob", Password: " s3cret ", CACert: "PEM",
					}},
					KubernetesVersion: "v1.35.0",
				}
			},
		},
		{
			name: "nodes are trimmed and roles lower-cased",
			in: ClusterConfig{Nodes: []Node{
				{Name: " n1 ", Address: " 10.0.0.1\t", Roles: []Role{" ControlPlane", "ETCD "}},
				{Name: "n2", Address: "10.0.0.2", Roles: []Role{"worker", " Edge "}},
			}},
			want: func() ClusterConfig {
				c := defaulted()
				n1 := defaultedNode("n1", "10.0.0.1", "", DefaultSSHPort)
				n1.Roles = []Role{RoleControlPlane, RoleEtcd}
				n2 := defaultedNode("n2", "10.0.0.2", "", DefaultSSHPort)
				n2.Roles = []Role{RoleWorker, RoleEdge}
				c.Nodes = []Node{n1, n2}
				return c
			},
		},
		{
			name: "a bad port is left for validation",
			in:   ClusterConfig{SSHPort: -1},
			want: func() ClusterConfig {
				c := defaulted()
				c.SSHPort = -1
				return c
			},
		},
		{
			name: "nodes inherit the cluster's ssh settings and zke's defaults",
			in: ClusterConfig{SSHUser: " admin ", SSHPort: 2200, Nodes: []Node{
				{Name: "n1", Address: " 10.0.0.1 ", Roles: []Role{RoleWorker}},
			}},
			want: func() ClusterConfig {
				c := defaulted()
				c.SSHUser, c.SSHPort = "admin", 2200
				n := defaultedNode("n1", "10.0.0.1", "admin", 2200)
				n.Roles = []Role{RoleWorker}
				c.Nodes = []Node{n}
				return c
			},
		},
		{
			name: "per-node defaults have the documented values",
			in:   ClusterConfig{SSHUser: "root", Nodes: []Node{{Name: "n1", Address: "10.0.0.1"}}},
			want: func() ClusterConfig {
				c := defaulted()
				c.SSHUser = "root"
				c.Nodes = []Node{{
					Name: "n1", Address: "10.0.0.1", InternalAddress: "10.0.0.1", SSHPort: 22, SSHUser: "root",
					DockerSocket: "/var/run/docker.sock", ContainerdSocket: "/run/containerd/containerd.sock", PrefixPath: "/",
				}}
				return c
			},
		},
		{
			name: "white-space-only node settings count as empty",
			in: ClusterConfig{SSHUser: "root", Nodes: []Node{{
				Name: "n1", Address: "10.0.0.1", InternalAddress: " ", SSHUser: "\t",
				DockerSocket: " ", ContainerdSocket: "\n", PrefixPath: " ",
			}}},
			want: func() ClusterConfig {
				c := defaulted()
				c.SSHUser = "root"
				c.Nodes = []Node{defaultedNode("n1", "10.0.0.1", "root", DefaultSSHPort)}
				return c
			},
		},
		{
			name: "a node without an address gets no internal address",
			in:   ClusterConfig{Nodes: []Node{{Name: "n1"}}},
			want: func() ClusterConfig {
				c := defaulted()
				c.Nodes = []Node{defaultedNode("n1", "", "", DefaultSSHPort)}
				return c
			},
		},
		{
			name: "explicit node settings are kept, trimmed",
			in: ClusterConfig{SSHUser: "root", SSHPort: 22, Nodes: []Node{{
				Name: "n1", Address: "10.0.0.1", Roles: []Role{" Worker "},
				InternalAddress:  " 192.168.0.1 ",
				SSHPort:          2222,
				SSHUser:          " core ",
				DockerSocket:     " /run/docker.sock ",
				ContainerdSocket: " /run/k3s/containerd.sock\n",
				PrefixPath:       " /opt/zke ",
				Labels:           map[string]string{" zone ": " a ", "tier": "web "},
				Taints:           []Taint{{Key: " dedicated ", Value: " gpu ", Effect: " NoSchedule "}},
				Kubelet: KubeletOverrides{
					CgroupRoot: " /n1 ",
					ExtraArgs:  map[string]string{" max-pods ": " 50 ", "v": "2"},
				},
			}}},
			want: func() ClusterConfig {
				c := defaulted()
				c.SSHUser = "root"
				c.Nodes = []Node{{
					Name: "n1", Address: "10.0.0.1", Roles: []Role{RoleWorker},
					InternalAddress:  "192.168.0.1",
					SSHPort:          2222,
					SSHUser:          "core",
					DockerSocket:     "/run/docker.sock",
					ContainerdSocket: "/run/k3s/containerd.sock",
					PrefixPath:       "/opt/zke",
					Labels:           map[string]string{"zone": "a", "tier": "web"},
					Taints:           []Taint{{Key: "dedicated", Value: "gpu", Effect: TaintNoSchedule}},
					Kubelet: KubeletOverrides{
						CgroupRoot: "/n1",
						ExtraArgs:  map[string]string{"max-pods": "50", "v": "2"},
					},
				}}
				return c
			},
		},
		{
			name: "map keys that trimming would merge are kept verbatim",
			in: ClusterConfig{SSHUser: "root", Nodes: []Node{{
				Name: "n1", Address: "10.0.0.1",
				Labels: map[string]string{"zone": "a", " zone": " b ", "rack ": "r1", " tier ": "x", "tier\t": "y"},
			}}},
			want: func() ClusterConfig {
				c := defaulted()
				c.SSHUser = "root"
				n := defaultedNode("n1", "10.0.0.1", "root", DefaultSSHPort)
				n.Labels = map[string]string{"zone": "a", " zone": "b", "rack": "r1", " tier ": "x", "tier\t": "y"}
				c.Nodes = []Node{n}
				return c
			},
		},
		{
			name: "empty maps stay empty",
			in: ClusterConfig{
				Images: map[string]string{},
				Nodes:  []Node{{Name: "n1", Labels: map[string]string{}, Kubelet: KubeletOverrides{ExtraArgs: map[string]string{}}}},
			},
			want: func() ClusterConfig {
				c := defaulted()
				c.Images = map[string]string{}
				n := defaultedNode("n1", "", "", DefaultSSHPort)
				n.Labels, n.Kubelet.ExtraArgs = map[string]string{}, map[string]string{}
				c.Nodes = []Node{n}
				return c
			},
		},
		{
			name: "images and the image archive are trimmed",
			in: ClusterConfig{
				Images:       map[string]string{" etcd ": " reg.local/etcd:3.6 ", "pause": "reg.local/pause:3.10\n"},
				ImageArchive: " /srv/images.tar ",
			},
			want: func() ClusterConfig {
				c := defaulted()
				c.Images = map[string]string{ImageEtcd: "reg.local/etcd:3.6", ImagePause: "reg.local/pause:3.10"}
				c.ImageArchive = "/srv/images.tar"
				return c
			},
		},
		{
			name: "step deadlines are trimmed",
			in:   ClusterConfig{StepDeadlines: map[string]string{" images ": " 30m ", "etcd": "5m\n"}},
			want: func() ClusterConfig {
				c := defaulted()
				c.StepDeadlines = map[string]string{StepImages: "30m", StepEtcd: "5m"}
				return c
			},
		},
		{
			name: "a bad node port is left for validation",
			in:   ClusterConfig{Nodes: []Node{{Name: "n1", SSHPort: -1}}},
			want: func() ClusterConfig {
				c := defaulted()
				n := defaultedNode("n1", "", "", DefaultSSHPort)
				n.SSHPort = -1
				c.Nodes = []Node{n}
				return c
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			got.ApplyDefaults()
			want := tt.want()
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ApplyDefaults:\n got  %+v\n want %+v", got, want)
			}
			again := got
			again.ApplyDefaults()
			if !reflect.DeepEqual(again, want) {
				t.Fatalf("ApplyDefaults is not idempotent:\n got  %+v\n want %+v", again, want)
			}
		})
	}
}

func TestApplyDefaultsNilReceiver(t *testing.T) {
	var c *ClusterConfig
	c.ApplyDefaults() // must not panic
	var r *ImportRequest
	r.ApplyDefaults() // must not panic
}

func TestImportRequestApplyDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   ImportRequest
		want ImportRequest
	}{
		{"name trimmed", ImportRequest{Name: "  edge1\n", Kubeconfig: "k"}, ImportRequest{Name: "edge1", Kubeconfig: "k"}},
		{"kubeconfig verbatim", ImportRequest{Name: "a", Kubeconfig: " apiVersion: v1\n"}, ImportRequest{Name: "a", Kubeconfig: " apiVersion: v1\n"}},
		{"empty stays empty", ImportRequest{}, ImportRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			got.ApplyDefaults()
			if got != tt.want {
				t.Fatalf("ApplyDefaults: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestImageComponents(t *testing.T) {
	want := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet",
		"kubernetes", "pause", "coredns", "haproxy", "keepalived", "loadbalancer", "flannel"}
	got := ImageComponents()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ImageComponents() = %q, want %q", got, want)
	}
	got[0] = "changed"
	if again := ImageComponents(); !reflect.DeepEqual(again, want) {
		t.Fatalf("ImageComponents() after the caller changed its copy = %q, want %q", again, want)
	}
	// The all-in-one key stands for the components built from the
	// Kubernetes repository, each of which is a key of its own.
	for _, k := range KubernetesImageComponents() {
		if k == ImageKubernetes || !slices.Contains(want, k) {
			t.Errorf("KubernetesImageComponents() holds %q, which is not a per-component key", k)
		}
	}
}

func TestNetworkPluginValues(t *testing.T) {
	// The API carries these strings; clients send them verbatim.
	for got, want := range map[string]string{PluginFlannel: "flannel", PluginCalico: "calico", PluginBridge: "bridge"} {
		if got != want {
			t.Errorf("plugin constant %q, want %q", got, want)
		}
	}
	if DefaultNetworkPlugin != PluginFlannel {
		t.Errorf("DefaultNetworkPlugin = %q, want %q", DefaultNetworkPlugin, PluginFlannel)
	}
}

func TestStepNames(t *testing.T) {
	got := StepNames()
	want := []string{"connect", "preflight", "artifacts", "certificates", "images", "etcd", "controlplane", "workers", "network", "addons", "drain", "clean", "restart", "kubeconfig", "snapshot", "stop", "restore", "trust-ca", "reissue", "drop-ca"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("StepNames() = %q, want %q", got, want)
	}
	got[0] = "changed"
	if again := StepNames(); again[0] != StepConnect {
		t.Fatalf("StepNames() shares its slice with callers: %q", again)
	}
}
