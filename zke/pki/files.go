package pki

import (
	"fmt"
	"io/fs"
	"path"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// SSLSubdir is where certificates live on a node, below its prefix path.
const SSLSubdir = "etc/kubernetes/ssl"

// File modes: private keys and kubeconfigs (which embed a private key) are
// readable by root only; certificates and public keys by everyone.
const (
	SecretMode fs.FileMode = 0o600
	PublicMode fs.FileMode = 0o644
)

// File is one file to write on a node.
type File struct {
	Data []byte
	Mode fs.FileMode
}

// FileOptions says where and how Files lays the PKI out on a node.
type FileOptions struct {
	// Prefix is the node's prefix path; "" means "/".
	Prefix string
	// Server, when not empty, is the apiserver URL the node's components
	// use: Files then adds a kubeconfig (Kind.KubeconfigFile) for each
	// component on the node that authenticates with a client certificate.
	Server string
	// ClusterName names the cluster in those kubeconfigs; required with
	// Server.
	ClusterName string
}

// SSLDir is the certificate directory on a node with the given prefix.
func SSLDir(prefix string) string {
	if prefix == "" {
		prefix = "/"
	}
	return path.Join(prefix, SSLSubdir)
}

// entry is one certificate or key a node needs: which files of it to write.
type entry struct {
	id         ID
	cert       bool // the certificate (or public key)
	key        bool // the private key
	kubeconfig bool // a kubeconfig built from the client certificate
}

// layout lists what node n needs given its roles. Every node runs a
// kubelet and kube-proxy; etcd nodes run etcd; controlplane nodes run
// kube-apiserver, kube-controller-manager (which signs CSRs with the
// cluster CA key) and kube-scheduler.
func layout(n Node) []entry {
	cp, etcd := n.HasRole(model.RoleControlPlane), n.HasRole(model.RoleEtcd)
	out := []entry{
		{id: ID(KindClusterCA), cert: true, key: cp},
		{id: NodeID(KindKubelet, n.Name), cert: true, key: true, kubeconfig: true},
		{id: NodeID(KindKubeletServing, n.Name), cert: true, key: true},
		{id: ID(KindKubeProxy), cert: true, key: true, kubeconfig: true},
	}
	if cp || etcd {
		out = append(out, entry{id: ID(KindEtcdCA), cert: true})
	}
	if etcd {
		out = append(out,
			entry{id: NodeID(KindEtcdServer, n.Name), cert: true, key: true},
			entry{id: NodeID(KindEtcdPeer, n.Name), cert: true, key: true})
	}
	if cp {
		out = append(out,
			entry{id: ID(KindFrontProxyCA), cert: true},
			entry{id: NodeID(KindAPIServer, n.Name), cert: true, key: true},
			entry{id: ID(KindAPIServerEtcdClient), cert: true, key: true},
			entry{id: ID(KindAPIServerKubeletClient), cert: true, key: true},
			entry{id: ID(KindFrontProxyClient), cert: true, key: true},
			entry{id: ID(KindServiceAccount), cert: true, key: true},
			entry{id: ID(KindControllerManager), cert: true, key: true, kubeconfig: true},
			entry{id: ID(KindScheduler), cert: true, key: true, kubeconfig: true})
	}
	return out
}

// needs lists the IDs of everything node n needs.
func needs(n Node) []ID {
	l := layout(n)
	ids := make([]ID, len(l))
	for i, e := range l {
		ids[i] = e.id
	}
	return ids
}

// Files returns every file node n needs, by absolute path under
// SSLDir(opts.Prefix). A per-node certificate is written under its kind's
// file name (kube-apiserver.pem holds this node's apiserver certificate).
// The error wraps ErrMissing when the bundle lacks something the node
// needs (Ensure has not run with this node yet) and ErrInvalidInput when
// opts are incomplete.
func (b *Bundle) Files(n Node, opts FileOptions) (map[string]File, error) {
	if opts.Server != "" && opts.ClusterName == "" {
		return nil, fmt.Errorf("%w: files for node %s: a kubeconfig needs the cluster name", ErrInvalidInput, n.Name)
	}
	dir := SSLDir(opts.Prefix)
	out := make(map[string]File)
	put := func(name, data string, mode fs.FileMode) {
		out[path.Join(dir, name)] = File{Data: []byte(data), Mode: mode}
	}
	for _, e := range layout(n) {
		kind, _ := e.id.Split()
		if kind == KindServiceAccount {
			if b.ServiceAccount.Key == "" {
				return nil, fmt.Errorf("files for node %s: service-account key: %w; run the certificates step again", n.Name, ErrMissing)
			}
			put(kind.CertFile(), b.ServiceAccount.Public, PublicMode)
			put(kind.KeyFile(), b.ServiceAccount.Key, SecretMode)
			continue
		}
		c, err := b.Get(e.id)
		if err != nil {
			return nil, fmt.Errorf("files for node %s: %w", n.Name, err)
		}
		_, isCA := b.CA(kind)
		switch {
		case e.cert && isCA:
			// What components verify peers with: the trust bundle.
			put(kind.CertFile(), b.Trust(kind), PublicMode)
		case e.cert:
			put(kind.CertFile(), c.Cert, PublicMode)
		}
		if e.key && isCA {
			// The signer's certificate alone beside its key:
			// kube-controller-manager signs with exactly one.
			put(kind.SignerCertFile(), c.Cert, PublicMode)
		}
		if e.key {
			put(kind.KeyFile(), c.Key, SecretMode)
		}
		if e.kubeconfig && opts.Server != "" {
			kc, err := KubeconfigFor(c, b.Trust(KindClusterCA), opts.Server, opts.ClusterName)
			if err != nil {
				return nil, fmt.Errorf("files for node %s: kubeconfig %s: %w", n.Name, e.id, err)
			}
			out[path.Join(dir, kind.KubeconfigFile())] = File{Data: kc, Mode: SecretMode}
		}
	}
	return out, nil
}
