package testbed

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"slices"
	"testing"
)

func TestAuthorityIssues(t *testing.T) {
	ca, err := newAuthority("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	other, err := newAuthority("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		req       certRequest
		verify    x509.VerifyOptions
		roots     *authority
		wantValid bool
	}{
		{"serving certificate for a DNS name", certRequest{commonName: "s", dnsNames: []string{"kubernetes.default.svc"}, server: true},
			x509.VerifyOptions{DNSName: "kubernetes.default.svc", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, true},
		{"serving certificate for an IP", certRequest{commonName: "s", ips: []net.IP{net.ParseIP("10.250.0.11")}, server: true},
			x509.VerifyOptions{DNSName: "10.250.0.11", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, true},
		{"serving certificate for another name", certRequest{commonName: "s", dnsNames: []string{"a"}, server: true},
			x509.VerifyOptions{DNSName: "b", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, false},
		{"client certificate used as client", certRequest{commonName: "u", organizations: []string{"system:masters"}, client: true},
			x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, ca, true},
		{"client certificate used as server", certRequest{commonName: "u", client: true},
			x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, false},
		{"certificate checked against another CA", certRequest{commonName: "u", client: true},
			x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, other, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM, err := ca.issue(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				t.Fatalf("certificate and key do not match: %v", err)
			}
			block, _ := pem.Decode(certPEM)
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cert.Subject.Organization, tc.req.organizations) || cert.Subject.CommonName != tc.req.commonName {
				t.Errorf("subject = %v, want CN=%s O=%v", cert.Subject, tc.req.commonName, tc.req.organizations)
			}
			tc.verify.Roots = x509.NewCertPool()
			tc.verify.Roots.AddCert(tc.roots.cert)
			_, err = cert.Verify(tc.verify)
			if (err == nil) != tc.wantValid {
				t.Fatalf("verify: %v, want valid=%v", err, tc.wantValid)
			}
		})
	}
}
