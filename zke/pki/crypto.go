package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// authority is a parsed certificate authority, ready to sign.
type authority struct {
	kind Kind
	cert *x509.Certificate
	key  crypto.Signer
}

// newKey generates a leaf, CA or service-account key.
func newKey() (crypto.Signer, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// serial returns a random positive 128-bit certificate serial number.
func serial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("draw certificate serial: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

// newCA creates a self-signed certificate authority valid from now (minus
// Backdate) for validity.
func newCA(kind Kind, clusterName string, now time.Time, validity time.Duration) (Cert, *authority, error) {
	key, err := newKey()
	if err != nil {
		return Cert{}, nil, fmt.Errorf("generate %s key: %w", kind, err)
	}
	sn, err := serial()
	if err != nil {
		return Cert{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		// The cluster name in the subject keeps the CAs of different
		// clusters apart in any trust store that holds several.
		Subject:               pkix.Name{CommonName: string(kind), OrganizationalUnit: []string{clusterName}},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return Cert{}, nil, fmt.Errorf("create %s certificate: %w", kind, err)
	}
	return encodePair(der, key, &authority{kind: kind, key: key})
}

// issue creates a leaf certificate for s signed by ca, valid from now
// (minus Backdate) for validity but never beyond the CA itself.
func issue(s spec, ca *authority, now time.Time, validity time.Duration) (Cert, error) {
	key, err := newKey()
	if err != nil {
		return Cert{}, fmt.Errorf("generate key: %w", err)
	}
	sn, err := serial()
	if err != nil {
		return Cert{}, err
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	ips := make([]net.IP, len(s.ips))
	for i, ip := range s.ips {
		ips[i] = ip.AsSlice()
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           s.usages,
		BasicConstraintsValid: true,
		DNSNames:              s.dns,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return Cert{}, fmt.Errorf("sign with %s: %w", ca.kind, err)
	}
	c, _, err := encodePair(der, key, nil)
	return c, err
}

// encodePair PEM-encodes a certificate and its key; when a is not nil it
// is completed with the parsed certificate.
func encodePair(der []byte, key crypto.Signer, a *authority) (Cert, *authority, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Cert{}, nil, fmt.Errorf("parse new certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Cert{}, nil, err
	}
	if a != nil {
		a.cert = cert
	}
	return Cert{
		Cert:     string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Key:      keyPEM,
		NotAfter: cert.NotAfter,
	}, a, nil
}

// encodeKey PEM-encodes key as PKCS #8.
func encodeKey(key crypto.Signer) (string, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", fmt.Errorf("encode private key: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

// encodePublic PEM-encodes the public half of key as PKIX.
func encodePublic(key crypto.Signer) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// parseKey reads a PEM private key in PKCS #8, SEC 1 or PKCS #1 form, so
// that keys imported from other tools are accepted too.
func parseKey(data string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(data))
	if block == nil {
		return nil, errors.New("private key is not PEM")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unexpected PEM block %q for a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private key of type %T cannot sign", key)
	}
	return signer, nil
}

// keyMatches reports whether cert carries the public half of key.
func keyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(key.Public())
}

// parsePair parses a stored certificate and its key and checks that they
// belong together.
func parsePair(c Cert) (*x509.Certificate, crypto.Signer, error) {
	cert, err := c.X509()
	if err != nil {
		return nil, nil, err
	}
	key, err := parseKey(c.Key)
	if err != nil {
		return nil, nil, err
	}
	if !keyMatches(cert, key) {
		return cert, key, errKeyMismatch
	}
	return cert, key, nil
}
