package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// CertPool returns a pool trusting the PEM certificates in caPEM (a CA of
// the bundle, like Bundle.EtcdCA.Cert).
func CertPool(caPEM string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(caPEM)) {
		return nil, fmt.Errorf("%w: no PEM certificate in the CA data", ErrInvalidInput)
	}
	return pool, nil
}

// ClientTLSConfig returns the TLS configuration a health check uses to
// reach a component that requires a client certificate: it presents
// client, trusts only caPEM and expects the server to present a
// certificate for serverName (an IP or a DNS name from its SANs; the
// dialled address may differ, as through an SSH tunnel).
func ClientTLSConfig(client Cert, caPEM, serverName string) (*tls.Config, error) {
	pair, err := client.TLSCertificate()
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	pool, err := CertPool(caPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		ServerName:   serverName,
	}, nil
}
