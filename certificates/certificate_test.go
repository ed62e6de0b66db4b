package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/zke/pki"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// issue makes a certificate valid from testNow until notAfter, signed by
// parent (self-signed when parent is nil), and returns it as PEM.
func issue(t *testing.T, cn string, ca bool, notAfter time.Time, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (string, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: testNow, NotAfter: notAfter, IsCA: ca, BasicConstraintsValid: true,
		DNSNames: []string{cn + ".example"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")},
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), c, key
}

func testBundle(t *testing.T) *pki.Bundle {
	caPEM, ca, caKey := issue(t, "kube-ca", true, testNow.AddDate(10, 0, 0), nil, nil)
	apiPEM, _, _ := issue(t, "kube-apiserver", false, testNow.AddDate(1, 0, 0), ca, caKey)
	kubeletPEM, _, _ := issue(t, "system:node:n2", false, testNow.AddDate(0, 0, 100), ca, caKey)
	return &pki.Bundle{
		CASet: pki.CASet{ClusterCA: pki.Cert{Cert: caPEM}},
		Certs: map[pki.ID]pki.Cert{
			pki.NodeID(pki.KindAPIServer, "n1"): {Cert: apiPEM},
			pki.NodeID(pki.KindKubelet, "n2"):   {Cert: kubeletPEM},
			pki.NodeID(pki.KindKubelet, "n3"):   {Cert: "not a certificate"},
		},
	}
}

func TestFromBundle(t *testing.T) {
	cs := FromBundle(testBundle(t), testNow)
	if len(cs) != 4 {
		t.Fatalf("%d certificates, want 4: %+v", len(cs), cs)
	}
	wantOrder := []string{"kube-kubelet/n3", "kube-kubelet/n2", "kube-apiserver/n1", "kube-ca"}
	for i, id := range wantOrder {
		if cs[i].ID != id {
			t.Fatalf("order %v…, want %v (unreadable first, then soonest expiry)", cs[i].ID, wantOrder)
		}
	}
	if cs[0].Error == "" || cs[0].Node != "n3" {
		t.Errorf("the damaged certificate %+v is not listed with its error", cs[0])
	}
	kubelet := cs[1]
	if kubelet.Kind != "kube-kubelet" || kubelet.Node != "n2" || kubelet.DaysLeft != 100 || kubelet.CA ||
		kubelet.Subject != "CN=system:node:n2" || kubelet.Issuer != "CN=kube-ca" {
		t.Errorf("kubelet certificate %+v", kubelet)
	}
	if len(kubelet.SANs) != 2 || kubelet.SANs[0] != "system:node:n2.example" || kubelet.SANs[1] != "10.0.0.1" {
		t.Errorf("SANs %v", kubelet.SANs)
	}
	if !cs[3].CA || cs[3].DaysLeft < 3650 {
		t.Errorf("CA %+v", cs[3])
	}
	if FromBundle(nil, testNow) != nil {
		t.Error("a cluster without a PKI has certificates")
	}
}

// During a CA rotation the other generation of CAs is listed beside the
// signing ones, its id marked.
func TestFromBundleDuringCARotation(t *testing.T) {
	b := testBundle(t)
	nextPEM, _, _ := issue(t, "kube-ca", true, testNow.AddDate(11, 0, 0), nil, nil)
	b.Incoming = &pki.CASet{ClusterCA: pki.Cert{Cert: nextPEM}}
	var got *Certificate
	for _, c := range FromBundle(b, testNow) {
		if c.ID == "kube-ca@incoming" {
			got = &c
		}
	}
	if got == nil || !got.CA || got.Kind != "kube-ca" || got.DaysLeft < 4000 {
		t.Fatalf("incoming CA listed as %+v", got)
	}
}

// The service-account signing key is listed for its age, after every
// certificate, and takes no part in warnings.
func TestServiceAccountKeyAge(t *testing.T) {
	b := testBundle(t)
	b.ServiceAccount = pki.KeyPair{Public: "pem", Created: testNow.AddDate(0, 0, -400).Add(-time.Hour)}
	cs := FromBundle(b, testNow)
	last := cs[len(cs)-1]
	if last.ID != "kube-service-account" || last.Kind != ServiceAccountKeyKind || last.Expires() || last.AgeDays == nil || *last.AgeDays != 400 {
		t.Fatalf("service-account key listed as %+v, want last with an age of 400 days", last)
	}
	if w := WarningFor(cs, testNow); w != nil && w.Certificate == "kube-service-account" {
		t.Errorf("the key without expiry raised a warning: %+v", w)
	}
	b.ServiceAccount.Created = testNow.Add(-time.Minute)
	if got := FromBundle(b, testNow); *got[len(got)-1].AgeDays != 0 {
		t.Errorf("a key made a minute ago is %d days old, want 0", *got[len(got)-1].AgeDays)
	}
	b.ServiceAccount.Created = time.Time{}
	if got := FromBundle(b, testNow); got[len(got)-1].AgeDays != nil {
		t.Error("a key of unknown creation has an age")
	}
}

func TestFromKubeconfig(t *testing.T) {
	caPEM, ca, caKey := issue(t, "kube-ca", true, testNow.AddDate(10, 0, 0), nil, nil)
	clientPEM, _, _ := issue(t, "kube-admin", false, testNow.AddDate(0, 0, 20), ca, caKey)
	cs := FromKubeconfig("admin", []byte(clientPEM), []byte(caPEM), testNow)
	if len(cs) != 2 || cs[0].ID != "kubeconfig/admin" || cs[0].Kind != "kubeconfig-client" || cs[0].DaysLeft != 20 || cs[1].ID != "kubeconfig/admin-ca" {
		t.Errorf("kubeconfig certificates %+v", cs)
	}
	if got := FromKubeconfig("admin", nil, nil, testNow); len(got) != 0 {
		t.Errorf("a token kubeconfig has certificates %+v", got)
	}
}

func TestWarningFor(t *testing.T) {
	tests := []struct {
		name     string
		daysLeft float64
		want     int // -1: no warning
	}{
		{"a year left", 365, -1},
		{"120 days and an hour", 120.05, 120},
		{"121 days", 121, -1},
		{"119 days", 119.5, 120},
		{"31 days", 31, 120},
		{"29 days", 29, 30},
		{"8 days", 8, 30},
		{"7 days", 7.5, 7},
		{"6 days", 6.5, 7},
		{"last hours", 0.2, 7},
		{"expired", -2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notAfter := testNow.Add(time.Duration(tt.daysLeft * 24 * float64(time.Hour)))
			cs := []Certificate{
				{ID: "broken", Error: "not a certificate"},
				{ID: "later", NotAfter: testNow.AddDate(5, 0, 0)},
				{ID: "first", NotAfter: notAfter},
			}
			w := WarningFor(cs, testNow)
			if tt.want < 0 {
				if w != nil {
					t.Fatalf("warning %+v, want none", w)
				}
				return
			}
			if w == nil || w.Within != tt.want || w.Certificate != "first" || w.Message == "" {
				t.Fatalf("warning %+v, want within %d for certificate first", w, tt.want)
			}
		})
	}
	if WarningFor(nil, testNow) != nil {
		t.Error("no certificates, yet a warning")
	}
}
