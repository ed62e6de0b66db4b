package model

import (
	"reflect"
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
					KubernetesVersion:   "v1.36.3",
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
				c.Nodes = []Node{
					{Name: "n1", Address: "10.0.0.1", Roles: []Role{RoleControlPlane, RoleEtcd}},
					{Name: "n2", Address: "10.0.0.2", Roles: []Role{RoleWorker, RoleEdge}},
				}
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
