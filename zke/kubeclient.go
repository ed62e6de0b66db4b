package zke

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
)

// kubeClient is a client-go client for the new cluster as zke's
// super-admin, connected through the first controlplane node's SSH
// connection, so that setup works even when singlecloud cannot reach the
// API server directly.
func (r *run) kubeClient() (kubeclient.Interface, error) {
	return r.kubeClientAs(r.superAdmin())
}

// superAdmin is the certificate zke acts with: the super-admin, or on a
// cluster whose PKI predates it (until its next certificates step) the
// admin, which was in system:masters then.
func (r *run) superAdmin() pki.ID {
	if b := r.snapshot().PKI; b != nil {
		if _, err := b.Get(pki.ID(pki.KindSuperAdmin)); err != nil {
			return pki.ID(pki.KindAdmin)
		}
	}
	return pki.ID(pki.KindSuperAdmin)
}

// kubeClientAs is kubeClient authenticated with the client certificate
// id of the PKI.
func (r *run) kubeClientAs(id pki.ID) (kubeclient.Interface, error) {
	cps := withRole(r.nodes, model.RoleControlPlane)
	if len(cps) == 0 {
		return nil, fmt.Errorf("the cluster has no controlplane node")
	}
	cp := cps[0]
	host := "https://" + hostPort(cp.InternalAddress, portAPIServer)
	if r.sharedEndpoint() {
		// Through the endpoint: the first controlplane node's own API
		// server may be the one that is down.
		var err error
		if host, err = r.apiServerURL(); err != nil {
			return nil, err
		}
	}
	return r.kubeClientVia(id, cp, host)
}

// kubeClientVia is a client of the API server at host, authenticated
// with the client certificate id, connected through n's SSH connection.
func (r *run) kubeClientVia(id pki.ID, n node, host string) (kubeclient.Interface, error) {
	c, err := r.client(n)
	if err != nil {
		return nil, err
	}
	b := r.snapshot().PKI
	if b == nil {
		return nil, fmt.Errorf("no certificates yet")
	}
	cert, err := b.Get(id)
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{
		Host: host,
		TLSClientConfig: rest.TLSClientConfig{
			CertData: []byte(cert.Cert),
			KeyData:  []byte(cert.Key),
			CAData:   []byte(b.Trust(pki.KindClusterCA)),
		},
		Dial:      c.DialContext,
		Timeout:   probeTimeout * 3,
		UserAgent: "zke",
		QPS:       20,
		Burst:     40,
	}
	return kubeclient.NewForConfig(cfg)
}
