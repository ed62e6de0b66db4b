package validation

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// ed25519Key returns a freshly generated Ed25519 private key in OpenSSH
// PEM format, encrypted with passphrase when it is not empty.
func ed25519Key(t testing.TB, passphrase string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate ed25519 key: %v", err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "validation test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "validation test", []byte(passphrase))
	}
	if err != nil {
		t.Fatalf("marshal ed25519 key: %v", err)
	}
	return string(pem.EncodeToMemory(block))
}

// rsaKey returns a freshly generated RSA private key in PKCS#1 PEM format.
func rsaKey(t *testing.T) string {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("generate rsa key: %v", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(priv)}))
}

// validCluster builds a valid, defaulted 3-node config: n1 controlplane and
// etcd, n2 worker and etcd, n3 worker and edge.
func validCluster(t *testing.T) model.ClusterConfig {
	t.Helper()
	c := model.ClusterConfig{
		Name:               "prod",
		SSHUser:            "root",
		SSHKey:             ed25519Key(t, ""),
		SingleCloudAddress: "10.0.0.9:8088",
		Nodes: []model.Node{
			{Name: "n1", Address: "10.0.0.1", Roles: []model.Role{model.RoleControlPlane, model.RoleEtcd}},
			{Name: "n2", Address: "10.0.0.2", Roles: []model.Role{model.RoleWorker, model.RoleEtcd}},
			{Name: "n3", Address: "10.0.0.3", Roles: []model.Role{model.RoleWorker, model.RoleEdge}},
		},
		ClusterUpstreamDNS: []string{"8.8.8.8"},
		PrivateRegistries:  []model.PrivateRegistry{{URL: "registry.local:5000", User: "pull", Password: "s3cret"}},
	}
	c.ApplyDefaults()
	return c
}

// withDefaults returns n as ApplyDefaults leaves it in a cluster whose
// sshUser is root and sshPort 22 (the defaults of validCluster).
func withDefaults(n model.Node) model.Node {
	c := model.ClusterConfig{SSHUser: "root", Nodes: []model.Node{n}}
	c.ApplyDefaults()
	return c.Nodes[0]
}

// fieldErrors returns the violations err reports, failing the test when err
// is not nil and not an Errors that matches ErrInvalid.
func fieldErrors(t *testing.T, err error) Errors {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error %v (%T) is not validation.Errors", err, err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v does not match ErrInvalid", err)
	}
	if len(errs) == 0 {
		t.Fatalf("a non-nil error with no violations")
	}
	return errs
}

// checkViolations asserts that err reports exactly the fields want, in
// order, and that the first violation's reason contains reason. An empty
// want means err must be nil.
func checkViolations(t *testing.T, err error, want []string, reason string) {
	t.Helper()
	errs := fieldErrors(t, err)
	if got := errs.Fields(); !slices.Equal(got, want) {
		t.Fatalf("violations of %q, want %q; error: %v", got, want, err)
	}
	if len(want) > 0 && !strings.Contains(errs[0].Reason, reason) {
		t.Fatalf("reason %q does not contain %q", errs[0].Reason, reason)
	}
}

// roles builds a role list.
func roles(rs ...model.Role) []model.Role { return rs }

const (
	cp     = model.RoleControlPlane
	etcd   = model.RoleEtcd
	worker = model.RoleWorker
	edge   = model.RoleEdge
)
