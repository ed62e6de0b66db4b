package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TLSFiles are the PEM files of an etcd started by StartTLS: its CA, and a
// client certificate and key the CA signed.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
	serverCert, serverKey     string
}

// StartTLS starts a new etcd that serves https on loopback and requires a
// client certificate signed by its own CA, and stops it when tb ends.
func StartTLS(tb testing.TB) (*Server, TLSFiles) {
	tb.Helper()
	bin := require(tb)
	dir := tb.TempDir()
	files, err := writePKI(dir)
	if err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	s, err := startWith(bin, dir, &files)
	if err != nil {
		tb.Fatalf("etcdtest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s, files
}

// tlsArgs are etcd's flags for files.
func (f *TLSFiles) args() []string {
	return []string{"--cert-file=" + f.serverCert, "--key-file=" + f.serverKey,
		"--trusted-ca-file=" + f.CAFile, "--client-cert-auth"}
}

// clientConfig is what the health check presents.
func (f *TLSFiles) clientConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// writePKI writes a CA, a server certificate for 127.0.0.1 and a client
// certificate into dir.
func writePKI(dir string) (TLSFiles, error) {
	f := TLSFiles{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"),
		KeyFile: filepath.Join(dir, "client-key.pem"), serverCert: filepath.Join(dir, "server.pem"),
		serverKey: filepath.Join(dir, "server-key.pem")}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	caTmpl := template("etcdtest CA")
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return f, err
	}
	if err := writePEM(f.CAFile, "CERTIFICATE", caDER); err != nil {
		return f, err
	}
	issue := func(name, certPath, keyPath string, usage x509.ExtKeyUsage) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := template(name)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writePEM(keyPath, "PRIVATE KEY", keyDER)
	}
	if err := issue("etcdtest server", f.serverCert, f.serverKey, x509.ExtKeyUsageServerAuth); err != nil {
		return f, fmt.Errorf("issue server certificate: %w", err)
	}
	if err := issue("singlecloud", f.CertFile, f.KeyFile, x509.ExtKeyUsageClientAuth); err != nil {
		return f, fmt.Errorf("issue client certificate: %w", err)
	}
	return f, nil
}

func template(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	return &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
