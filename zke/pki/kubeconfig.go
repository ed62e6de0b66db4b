package pki

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigFor returns a kubeconfig (YAML) that reaches the apiserver at
// server, trusting caPEM and authenticating with the client certificate c,
// whose key is embedded: the result is a secret. The user is named after
// the certificate's CN and the single context "<user>@<clusterName>" is
// current.
func KubeconfigFor(c Cert, caPEM, server, clusterName string) ([]byte, error) {
	if server == "" || clusterName == "" || caPEM == "" {
		return nil, fmt.Errorf("%w: a kubeconfig needs the server URL, the cluster name and the CA", ErrInvalidInput)
	}
	cert, err := c.X509()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig for cluster %s: %w", clusterName, err)
	}
	user := cert.Subject.CommonName
	ctxName := user + "@" + clusterName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: []byte(caPEM),
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: []byte(c.Cert),
		ClientKeyData:         []byte(c.Key),
	}
	cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: user}
	cfg.CurrentContext = ctxName
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig for %s@%s: %w", user, clusterName, err)
	}
	return out, nil
}
