package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind names one sort of certificate. It doubles as the base name of the
// files the certificate is written to on a node (CertFile, KeyFile).
type Kind string

// The certificate kinds of a cluster. Per-node kinds have one certificate
// per node (see NodeID); the others exist once per cluster.
const (
	// KindClusterCA signs the apiserver, kubelet and component certificates.
	KindClusterCA Kind = "kube-ca"
	// KindEtcdCA signs the etcd server, peer and client certificates.
	KindEtcdCA Kind = "kube-etcd-ca"
	// KindFrontProxyCA signs the aggregation-layer client certificate.
	KindFrontProxyCA Kind = "kube-front-proxy-ca"

	// KindAPIServer is the kube-apiserver serving certificate, per
	// controlplane node.
	KindAPIServer Kind = "kube-apiserver"
	// KindEtcdServer is etcd's client-facing serving certificate, per etcd
	// node.
	KindEtcdServer Kind = "kube-etcd-server"
	// KindEtcdPeer is etcd's peer certificate (server and client), per etcd
	// node.
	KindEtcdPeer Kind = "kube-etcd-peer"
	// KindKubelet is the kubelet's client certificate, per node.
	KindKubelet Kind = "kube-kubelet"
	// KindKubeletServing is the kubelet's serving certificate, per node.
	KindKubeletServing Kind = "kube-kubelet-serving"

	// KindAPIServerEtcdClient is kube-apiserver's client certificate for
	// etcd; zke also uses it for etcd health checks and member changes.
	KindAPIServerEtcdClient Kind = "kube-apiserver-etcd-client"
	// KindAPIServerKubeletClient is kube-apiserver's client certificate for
	// the kubelets (logs, exec, port-forward).
	KindAPIServerKubeletClient Kind = "kube-apiserver-kubelet-client"
	// KindFrontProxyClient is kube-apiserver's client certificate for
	// aggregated API servers.
	KindFrontProxyClient Kind = "kube-front-proxy-client"
	// KindControllerManager is kube-controller-manager's client certificate.
	KindControllerManager Kind = "kube-controller-manager"
	// KindScheduler is kube-scheduler's client certificate.
	KindScheduler Kind = "kube-scheduler"
	// KindKubeProxy is kube-proxy's client certificate, shared by all nodes.
	KindKubeProxy Kind = "kube-proxy"
	// KindAdmin is the cluster administrator's client certificate, behind
	// the kubeconfig singlecloud hands out. Its user (Input.AdminUser)
	// holds cluster-admin through a ClusterRoleBinding (AdminBinding),
	// not through the group system:masters, so that a rotation that
	// changes the user revokes every kubeconfig handed out before.
	KindAdmin Kind = "kube-admin"
	// KindSuperAdmin is zke's own client certificate, in the group
	// system:masters: it works before any binding exists and is never
	// handed out (kubeadm's super-admin.conf).
	KindSuperAdmin Kind = "kube-super-admin"
	// KindServiceAccount is the service-account token signing key pair.
	KindServiceAccount Kind = "kube-service-account"
)

// CertFile is the file name of the kind's certificate (or, for
// KindServiceAccount, public key) on a node.
func (k Kind) CertFile() string { return string(k) + ".pem" }

// SignerCertFile is the file name of a CA's own certificate, beside its
// key (KeyFile), on the nodes that sign with it; CertFile holds what is
// trusted, which during a CA rotation is more than one certificate.
func (k Kind) SignerCertFile() string { return string(k) + "-signer.pem" }

// KeyFile is the file name of the kind's private key on a node.
func (k Kind) KeyFile() string { return string(k) + "-key.pem" }

// KubeconfigFile is the file name of the kubeconfig built from the kind's
// client certificate on a node.
func (k Kind) KubeconfigFile() string { return "kubecfg-" + string(k) + ".yaml" }

// ID identifies one certificate in a Bundle: the Kind for cluster-wide
// certificates, "kind/node" for per-node ones. It is a stable JSON map key.
type ID string

// NodeID is the ID of node's certificate of the given per-node kind.
func NodeID(k Kind, node string) ID { return ID(string(k) + "/" + node) }

// Split returns the kind and node of id; node is "" for a cluster-wide
// certificate.
func (id ID) Split() (Kind, string) {
	k, node, _ := strings.Cut(string(id), "/")
	return Kind(k), node
}

// Cert is one certificate with its private key, as stored in the cluster
// state.
type Cert struct {
	// Cert is the PEM-encoded certificate.
	Cert string `json:"cert"`
	// Key is the PEM-encoded PKCS #8 private key: a secret.
	Key string `json:"key"`
	// NotAfter is the certificate's expiry, recorded so the state shows it
	// without parsing PEM.
	NotAfter time.Time `json:"notAfter"`
}

// IsZero reports whether c holds no certificate.
func (c Cert) IsZero() bool { return c.Cert == "" && c.Key == "" }

// X509 parses the certificate.
func (c Cert) X509() (*x509.Certificate, error) {
	block, _ := pem.Decode([]byte(c.Cert))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("certificate is not a PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

// TLSCertificate pairs the certificate with its key for crypto/tls.
func (c Cert) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair([]byte(c.Cert), []byte(c.Key))
}

// KeyPair is the service-account signing key: kube-apiserver signs tokens
// with Key and verifies them, as kube-controller-manager does, with Public.
type KeyPair struct {
	// Key is the PEM-encoded PKCS #8 private key: a secret.
	Key string `json:"key"`
	// Public is the PEM-encoded PKIX public key of Key.
	Public string `json:"public"`
	// Created is when Key was generated (zero for a key made before
	// this was recorded): the key never expires, but its age is shown.
	Created time.Time `json:"created,omitempty"`
}

// Bundle is the whole PKI of one cluster. It is plain data: the caller
// stores it as JSON in the cluster state (sealed, since it holds private
// keys) and hands it back to Ensure on the next run. Ensure never modifies
// the Bundle it is given.
type Bundle struct {
	// CASet is the certificate authorities that sign (their fields are
	// the bundle's own in JSON).
	CASet
	// ServiceAccount is the service-account token key pair.
	ServiceAccount KeyPair `json:"serviceAccount"`
	// Certs holds every leaf certificate by ID.
	Certs map[ID]Cert `json:"certs"`
	// Incoming is the next generation of CAs during the first phase of a
	// CA rotation (carotation.go): trusted everywhere, signing nothing.
	Incoming *CASet `json:"incoming,omitempty"`
	// Retiring is the previous generation of CAs, without their keys,
	// during the second phase: still trusted, signing nothing.
	Retiring *CASet `json:"retiring,omitempty"`
}

// CA returns the certificate authority of the given kind (KindClusterCA,
// KindEtcdCA or KindFrontProxyCA); ok is false for any other kind.
func (b *Bundle) CA(k Kind) (c Cert, ok bool) {
	if !slices.Contains(caKinds(), k) {
		return Cert{}, false
	}
	return b.CASet.CA(k), true
}

// Get returns the certificate id: a leaf, or a CA by its kind. The error
// wraps ErrMissing when the bundle does not hold it.
func (b *Bundle) Get(id ID) (Cert, error) {
	c, ok := b.CA(Kind(id))
	if !ok {
		c = b.Certs[id]
	}
	if c.IsZero() {
		return Cert{}, fmt.Errorf("certificate %s: %w; run the certificates step again", id, ErrMissing)
	}
	return c, nil
}

// Expiries returns the NotAfter of every certificate in the bundle, CAs
// under their kind, for the state and for expiry warnings.
func (b *Bundle) Expiries() map[ID]time.Time {
	out := make(map[ID]time.Time, len(b.Certs)+3)
	for _, k := range []Kind{KindClusterCA, KindEtcdCA, KindFrontProxyCA} {
		if c, _ := b.CA(k); !c.IsZero() {
			out[ID(k)] = c.NotAfter
		}
	}
	for id, c := range b.Certs {
		out[id] = c.NotAfter
	}
	return out
}
