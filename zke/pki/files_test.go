package pki

import (
	"errors"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"k8s.io/client-go/tools/clientcmd"
)

func TestFilesPerRole(t *testing.T) {
	in := testInput()
	in.Nodes = append(in.Nodes, Node{Name: "n5", Address: "10.0.0.5", Roles: []model.Role{model.RoleControlPlane}})
	b, _ := mustEnsure(t, nil, in)
	pair := func(k Kind) []string { return []string{k.CertFile(), k.KeyFile()} }
	concat := func(lists ...[]string) []string { return slices.Sorted(slices.Values(slices.Concat(lists...))) }
	every := concat([]string{KindClusterCA.CertFile()}, pair(KindKubelet), pair(KindKubeletServing), pair(KindKubeProxy))
	etcd := concat([]string{KindEtcdCA.CertFile()}, pair(KindEtcdServer), pair(KindEtcdPeer))
	cp := concat([]string{KindClusterCA.KeyFile(), KindClusterCA.SignerCertFile(), KindEtcdCA.CertFile(), KindFrontProxyCA.CertFile()},
		pair(KindAPIServer), pair(KindAPIServerEtcdClient), pair(KindAPIServerKubeletClient), pair(KindFrontProxyClient),
		pair(KindServiceAccount), pair(KindControllerManager), pair(KindScheduler))
	cases := []struct {
		node string
		want []string
	}{
		{"n1", concat(every, etcd, cp)}, // controlplane + etcd
		{"n2", concat(every, etcd)},     // etcd + worker
		{"n3", every},                   // worker
		{"n4", concat(every, etcd)},     // etcd
		{"n5", concat(every, cp)},       // controlplane
	}
	for _, tc := range cases {
		t.Run(tc.node, func(t *testing.T) {
			n := in.Nodes[slices.IndexFunc(in.Nodes, func(n Node) bool { return n.Name == tc.node })]
			files, err := b.Files(n, FileOptions{Prefix: "/opt/zke"})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for p, f := range files {
				dir, name := path.Split(p)
				if dir != "/opt/zke/etc/kubernetes/ssl/" {
					t.Errorf("%s is not under the prefixed ssl directory", p)
				}
				names = append(names, name)
				wantMode := PublicMode
				if strings.HasSuffix(name, "-key.pem") {
					wantMode = SecretMode
				}
				if f.Mode != wantMode {
					t.Errorf("%s has mode %v, want %v", name, f.Mode, wantMode)
				}
				if len(f.Data) == 0 {
					t.Errorf("%s is empty", name)
				}
			}
			slices.Sort(names)
			want := slices.Compact(slices.Clone(tc.want))
			if !slices.Equal(names, want) {
				t.Errorf("files %v\nwant  %v", names, want)
			}
			dir := SSLDir("/opt/zke")
			if got := string(files[path.Join(dir, KindKubelet.CertFile())].Data); got != b.Certs[NodeID(KindKubelet, n.Name)].Cert {
				t.Errorf("kubelet certificate is not this node's")
			}
			if n.HasRole(model.RoleEtcd) {
				if got := string(files[path.Join(dir, KindEtcdPeer.KeyFile())].Data); got != b.Certs[NodeID(KindEtcdPeer, n.Name)].Key {
					t.Errorf("etcd peer key is not this node's")
				}
			}
		})
	}
}

func TestFilesWithKubeconfigs(t *testing.T) {
	in := testInput()
	b, _ := mustEnsure(t, nil, in)
	opts := FileOptions{Server: "https://127.0.0.1:6443", ClusterName: "c1"}
	cases := []struct {
		node string
		want []Kind
	}{
		{"n1", []Kind{KindControllerManager, KindKubelet, KindKubeProxy, KindScheduler}},
		{"n3", []Kind{KindKubelet, KindKubeProxy}},
	}
	for _, tc := range cases {
		t.Run(tc.node, func(t *testing.T) {
			n := in.Nodes[slices.IndexFunc(in.Nodes, func(n Node) bool { return n.Name == tc.node })]
			files, err := b.Files(n, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []Kind
			for _, p := range slices.Sorted(maps.Keys(files)) {
				name := path.Base(p)
				if !strings.HasPrefix(name, "kubecfg-") {
					continue
				}
				if p != path.Join("/", SSLSubdir, name) || files[p].Mode != SecretMode {
					t.Errorf("%s: mode %v; want 0600 under /%s", p, files[p].Mode, SSLSubdir)
				}
				cfg, err := clientcmd.Load(files[p].Data)
				if err != nil {
					t.Fatalf("%s does not parse: %v", name, err)
				}
				if cfg.Clusters["c1"] == nil || cfg.Clusters["c1"].Server != opts.Server {
					t.Errorf("%s: clusters %v", name, cfg.Clusters)
				}
				got = append(got, Kind(strings.TrimSuffix(strings.TrimPrefix(name, "kubecfg-"), ".yaml")))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("kubeconfigs for %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilesErrors(t *testing.T) {
	b, _ := mustEnsure(t, nil, testInput())
	stranger := Node{Name: "n9", Address: "10.0.0.9", Roles: []model.Role{model.RoleWorker}}
	if _, err := b.Files(stranger, FileOptions{}); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "n9") {
		t.Errorf("Files for an unknown node: %v, want ErrMissing naming n9", err)
	}
	if _, err := b.Files(testInput().Nodes[0], FileOptions{Server: "https://x"}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("Files with a server but no cluster name: %v, want ErrInvalidInput", err)
	}
	var empty Bundle
	if _, err := empty.Files(testInput().Nodes[0], FileOptions{}); !errors.Is(err, ErrMissing) {
		t.Errorf("Files of an empty bundle: %v, want ErrMissing", err)
	}
	if SSLDir("") != "/etc/kubernetes/ssl" {
		t.Errorf("SSLDir(\"\") = %q", SSLDir(""))
	}
}
