package pki

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"
	"time"
)

// verifies reports whether leaf chains to one of the CAs in trustPEM for
// the usage u.
func verifies(t *testing.T, leaf Cert, trustPEM string, u x509.ExtKeyUsage) bool {
	t.Helper()
	pool, err := CertPool(trustPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, err = parse(t, leaf).Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{u}, CurrentTime: testNow().Add(time.Hour)})
	return err == nil
}

// A CA rotation goes trust → reissue → drop. In the trust phase every
// leaf stays and both generations are trusted; in the reissue phase every
// leaf but the API servers' serving certificates comes from the new CAs,
// still trusted by the old trust; after the drop only the new CAs are
// trusted, the old admin certificate no longer verifies and every leaf
// does. The bundle round-trips through JSON in each phase (a resumed
// rotation starts from the stored state).
func TestCARotationPhases(t *testing.T) {
	in := testInput()
	first, _ := mustEnsure(t, nil, in)
	oldAdmin := first.Certs[ID(KindAdmin)]
	oldTrust := first.Trust(KindClusterCA)

	trusting, err := first.BeginCARotation(in)
	if err != nil {
		t.Fatal(err)
	}
	trusting = roundTrip(t, trusting)
	if _, err := trusting.BeginCARotation(in); !errors.Is(err, ErrRotationPhase) {
		t.Errorf("a second BeginCARotation: %v, want ErrRotationPhase", err)
	}
	if _, err := trusting.DropRetiring(); !errors.Is(err, ErrRotationPhase) {
		t.Errorf("DropRetiring in the trust phase: %v, want ErrRotationPhase", err)
	}
	b1, ch := mustEnsure(t, trusting, in)
	if !ch.Empty() {
		t.Errorf("the trust phase reissued %v", issuedIDs(ch))
	}
	if b1.ClusterCA != first.ClusterCA || b1.Incoming == nil || b1.Incoming.ClusterCA.Key == "" {
		t.Fatal("the trust phase must keep the signing CAs and carry the incoming ones with their keys")
	}
	for _, k := range caKinds() {
		if got := strings.Count(b1.Trust(k), "BEGIN CERTIFICATE"); got != 2 {
			t.Errorf("trust of %s holds %d certificates, want old and new", k, got)
		}
	}
	files, err := b1.Files(in.Nodes[0], FileOptions{Server: "https://10.0.0.100:6443", ClusterName: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for p, f := range files {
		byName[path.Base(p)] = string(f.Data)
	}
	if byName[KindClusterCA.CertFile()] != b1.Trust(KindClusterCA) || byName[KindClusterCA.SignerCertFile()] != first.ClusterCA.Cert {
		t.Error("kube-ca.pem must hold the trust bundle and kube-ca-signer.pem the signing CA alone")
	}
	if !strings.Contains(byName[KindKubelet.KubeconfigFile()], "certificate-authority-data") {
		t.Error("the kubelet's kubeconfig carries no CA")
	}

	promoted, err := b1.PromoteIncoming()
	if err != nil {
		t.Fatal(err)
	}
	promoted = roundTrip(t, promoted)
	if promoted.ClusterCA != b1.Incoming.ClusterCA || promoted.Retiring == nil || promoted.Retiring.ClusterCA.Key != "" {
		t.Fatal("promotion must make the incoming CAs sign and keep the old ones without keys")
	}
	b2, ch := mustEnsure(t, promoted, in)
	for id, c := range b2.Certs {
		issuedNow := c.Cert != first.Certs[id].Cert
		if keepsRetiring(id) {
			if issuedNow {
				t.Errorf("%s was reissued in the reissue phase; it must wait for the drop", id)
			}
			continue
		}
		if !issuedNow {
			t.Errorf("%s was not reissued from the new CA", id)
		}
		if reason := reasonOf(ch, id); reason != ReasonWrongCA {
			t.Errorf("%s reissued for %q, want %q", id, reason, ReasonWrongCA)
		}
	}
	if !verifies(t, b2.Certs[ID(KindAdmin)], b1.Trust(KindClusterCA), x509.ExtKeyUsageClientAuth) {
		t.Error("the new admin certificate is not trusted by components still on the trust phase's bundle")
	}
	if !verifies(t, oldAdmin, b2.Trust(KindClusterCA), x509.ExtKeyUsageClientAuth) {
		t.Error("during the reissue phase the old admin certificate must still be trusted")
	}
	if !verifies(t, b2.Certs[NodeID(KindAPIServer, "n1")], oldTrust, x509.ExtKeyUsageServerAuth) {
		t.Error("during the reissue phase the API server must still be verified by a kubeconfig from before the rotation")
	}
	again, ch := mustEnsure(t, roundTrip(t, b2), in)
	if !ch.Empty() || again.Certs[ID(KindAdmin)] != b2.Certs[ID(KindAdmin)] {
		t.Errorf("a resumed reissue phase reissued %v again", issuedIDs(ch))
	}

	dropped, err := b2.DropRetiring()
	if err != nil {
		t.Fatal(err)
	}
	b3, ch := mustEnsure(t, roundTrip(t, dropped), in)
	if got := issuedIDs(ch); len(got) != 1 || got[0] != NodeID(KindAPIServer, "n1") {
		t.Errorf("the drop reissued %v, want the API server's serving certificate only", got)
	}
	if b3.RotatingCA() || strings.Count(b3.Trust(KindClusterCA), "BEGIN CERTIFICATE") != 1 {
		t.Fatal("after the drop only the new CAs are trusted")
	}
	if verifies(t, oldAdmin, b3.Trust(KindClusterCA), x509.ExtKeyUsageClientAuth) {
		t.Error("after the drop the old admin certificate is still trusted")
	}
	for _, c := range b3.Certs {
		signerOf(t, b3, c)
	}
	if b3.ServiceAccount != first.ServiceAccount {
		t.Error("a CA rotation changed the service-account key: every token would be invalid")
	}
}

// signerOf returns the kind of the CA of b that signed c, failing the
// test when none did.
func signerOf(t *testing.T, b *Bundle, c Cert) Kind {
	t.Helper()
	leaf := parse(t, c)
	for _, k := range caKinds() {
		ca, _ := b.CA(k)
		if leaf.CheckSignatureFrom(parse(t, ca)) == nil {
			return k
		}
	}
	t.Errorf("certificate %s is signed by none of the bundle's CAs", leaf.Subject)
	return ""
}

// reasonOf is the reason ch gives for issuing id, or "".
func reasonOf(ch Changes, id ID) Reason {
	for _, is := range ch.Issued {
		if is.ID == id {
			return is.Reason
		}
	}
	return ""
}

// roundTrip returns b after a JSON encode and decode, as the cluster
// state stores it.
func roundTrip(t *testing.T, b *Bundle) *Bundle {
	t.Helper()
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var out Bundle
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
