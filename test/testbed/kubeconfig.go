package testbed

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigName names the single cluster, user and context of every
// kubeconfig the testbed writes.
const kubeconfigName = "testbed"

// buildKubeconfig serialises a one-context kubeconfig for server, trusting
// caPEM and authenticating as auth.
func buildKubeconfig(server string, caPEM []byte, auth *clientcmdapi.AuthInfo) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[kubeconfigName] = auth
	cfg.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: kubeconfigName}
	cfg.CurrentContext = kubeconfigName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig for %s: %w", server, err)
	}
	return data, nil
}

// ClientCertKubeconfig returns a kubeconfig that authenticates as user in
// groups with a new client certificate signed by the cluster CA, e.g.
// ("system:node:host2", "system:nodes") for a kubelet, or an unprivileged
// user to check RBAC.
func (cp *ControlPlane) ClientCertKubeconfig(user string, groups ...string) ([]byte, error) {
	certPEM, keyPEM, err := cp.ca.issue(certRequest{commonName: user, organizations: groups, client: true})
	if err != nil {
		return nil, fmt.Errorf("client certificate for %s: %w", user, err)
	}
	return buildKubeconfig(cp.URL, cp.CA, &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM})
}

// TokenKubeconfig returns a kubeconfig that sends token as bearer token.
// With cp.Token it is a cluster admin; any other string gets 401.
func (cp *ControlPlane) TokenKubeconfig(token string) []byte {
	data, err := buildKubeconfig(cp.URL, cp.CA, &clientcmdapi.AuthInfo{Token: token})
	if err != nil {
		// Encoding a kubeconfig of plain strings cannot fail.
		cp.t.Errorf("testbed: %v", err)
	}
	return data
}

// WrongCAKubeconfig returns the admin kubeconfig with the certificate of an
// unrelated CA as the cluster's CA, so that a client must refuse the
// server's certificate.
func (cp *ControlPlane) WrongCAKubeconfig() []byte { return cp.wrongCAKubeconfig }

// RESTConfig returns a client-go configuration for the admin kubeconfig.
func (cp *ControlPlane) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(cp.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig of %s: %w", cp.URL, err)
	}
	return cfg, nil
}
