// Package certificates is singlecloud's certificate calendar: it turns a
// cluster's PKI (the certificates zke issued) and the kubeconfig
// singlecloud hands out into a list of certificates with their subject,
// SANs and expiry, and says which warning a cluster is due — at 120, 30
// and 7 days before its first certificate expires — so that no cluster
// goes down a year after install because a certificate ran out unnoticed.
// It parses; it never issues or stores anything.
package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/zdnscloud/singlecloud/zke/pki"
)

// Certificate is one certificate of a cluster as the calendar shows it.
type Certificate struct {
	// ID names it in the cluster: the PKI's id ("kube-apiserver/n1",
	// "kube-ca") or "kubeconfig/<what>" for a handed-out kubeconfig's.
	ID string `json:"id"`
	// Kind is the sort of certificate ("kube-apiserver", "kube-ca",
	// "kubeconfig-client", …).
	Kind string `json:"kind"`
	// Node is the node a per-node certificate belongs to.
	Node string `json:"node,omitempty"`
	// CA marks a certificate authority.
	CA        bool      `json:"ca"`
	Subject   string    `json:"subject"`
	Issuer    string    `json:"issuer"`
	SANs      []string  `json:"sans,omitempty"`
	NotBefore time.Time `json:"notBefore"`
	NotAfter  time.Time `json:"notAfter"`
	// DaysLeft is the whole days until NotAfter (negative once expired);
	// 0 for a key that does not expire (NotAfter zero).
	DaysLeft int `json:"daysLeft"`
	// AgeDays is the whole days since NotBefore of a key that does not
	// expire (the service-account signing key), when its creation is
	// known.
	AgeDays *int `json:"ageDays,omitempty"`
	// Error says why a certificate could not be read (its other fields
	// are then empty): a damaged one is listed, never skipped.
	Error string `json:"error,omitempty"`
}

// Expires reports whether c has an expiry: keys (the service-account
// signing key) have none, and take no part in warnings or renewal.
func (c Certificate) Expires() bool { return !c.NotAfter.IsZero() }

// Refresh recomputes the fields of c that depend on now (DaysLeft,
// AgeDays), for a list kept from an earlier time.
func Refresh(c *Certificate, now time.Time) {
	switch {
	case c.Error != "":
	case c.Expires():
		c.DaysLeft = DaysLeft(c.NotAfter, now)
	case !c.NotBefore.IsZero():
		age := int(math.Floor(now.Sub(c.NotBefore).Hours() / 24))
		c.AgeDays = &age
	}
}

// DaysLeft is the whole days from now until t, rounded down: 0 on the
// last day, negative once t has passed.
func DaysLeft(t, now time.Time) int {
	return int(math.Floor(t.Sub(now).Hours() / 24))
}

// fromX509 describes c.
func fromX509(id, kind, node string, c *x509.Certificate, now time.Time) Certificate {
	out := Certificate{
		ID: id, Kind: kind, Node: node, CA: c.IsCA,
		Subject: c.Subject.String(), Issuer: c.Issuer.String(),
		NotBefore: c.NotBefore.UTC(), NotAfter: c.NotAfter.UTC(), DaysLeft: DaysLeft(c.NotAfter, now),
	}
	out.SANs = append(out.SANs, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out.SANs = append(out.SANs, ip.String())
	}
	return out
}

// parsePEM returns the first certificate of a PEM block list.
func parsePEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("no PEM CERTIFICATE block")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// describe lists one PEM certificate, or its error.
func describe(id, kind, node string, data []byte, now time.Time) Certificate {
	c, err := parsePEM(data)
	if err != nil {
		return Certificate{ID: id, Kind: kind, Node: node, Error: err.Error()}
	}
	return fromX509(id, kind, node, c, now)
}

// ServiceAccountKeyKind is the kind of the service-account signing key's
// entry: a key, without expiry, listed for its age.
const ServiceAccountKeyKind = "service-account-key"

// FromBundle lists every certificate of a zke PKI: the three CAs (and,
// during a CA rotation, the other generation of them), every leaf and
// the service-account signing key (its age), sorted by expiry (then id). The service-account key pair
// has no certificate and no expiry, and is not listed.
func FromBundle(b *pki.Bundle, now time.Time) []Certificate {
	if b == nil {
		return nil
	}
	var out []Certificate
	for _, k := range []pki.Kind{pki.KindClusterCA, pki.KindEtcdCA, pki.KindFrontProxyCA} {
		if c, _ := b.CA(k); !c.IsZero() {
			out = append(out, describe(string(k), string(k), "", []byte(c.Cert), now))
		}
	}
	// During a CA rotation the other generation is listed too, its id
	// marked: the incoming CAs will sign, the retiring ones are trusted
	// until the rotation drops them.
	for _, gen := range []struct {
		mark string
		set  *pki.CASet
	}{{"@incoming", b.Incoming}, {"@retiring", b.Retiring}} {
		for _, k := range []pki.Kind{pki.KindClusterCA, pki.KindEtcdCA, pki.KindFrontProxyCA} {
			if c := gen.set.CA(k); c.Cert != "" {
				out = append(out, describe(string(k)+gen.mark, string(k), "", []byte(c.Cert), now))
			}
		}
	}
	for id, c := range b.Certs {
		k, node := id.Split()
		out = append(out, describe(string(id), string(k), node, []byte(c.Cert), now))
	}
	if sa := b.ServiceAccount; sa.Public != "" {
		key := Certificate{ID: string(pki.KindServiceAccount), Kind: ServiceAccountKeyKind,
			Subject: "service-account token signing key (no expiry)", NotBefore: sa.Created.UTC()}
		Refresh(&key, now)
		out = append(out, key)
	}
	Sort(out)
	return out
}

// FromKubeconfig lists the certificates in a kubeconfig singlecloud hands
// out: its client certificate (what stops working when it expires) and
// the CA it trusts; a token-authenticated kubeconfig has neither and adds
// nothing. what names the kubeconfig ("admin").
func FromKubeconfig(what string, clientCert, caCert []byte, now time.Time) []Certificate {
	var out []Certificate
	if len(clientCert) > 0 {
		out = append(out, describe("kubeconfig/"+what, "kubeconfig-client", "", clientCert, now))
	}
	if len(caCert) > 0 {
		out = append(out, describe("kubeconfig/"+what+"-ca", "kubeconfig-ca", "", caCert, now))
	}
	return out
}

// Sort orders certificates by expiry, soonest first (unreadable ones
// first: they need a look most; keys without expiry last), then by id.
func Sort(cs []Certificate) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if (a.Error != "") != (b.Error != "") {
			return a.Error != ""
		}
		if a.Expires() != b.Expires() {
			return a.Expires()
		}
		if !a.NotAfter.Equal(b.NotAfter) {
			return a.NotAfter.Before(b.NotAfter)
		}
		return a.ID < b.ID
	})
}
