package pki

import (
	"bytes"
	"cmp"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"
)

// Reason says why Ensure issued a certificate or key.
type Reason string

// The reasons for issuing. Only ReasonMissing ever applies to a CA or to
// the service-account key.
const (
	ReasonMissing     Reason = "missing"
	ReasonUnreadable  Reason = "unreadable"
	ReasonWrongCA     Reason = "not signed by its certificate authority"
	ReasonKeyMismatch Reason = "key does not match"
	ReasonChanged     Reason = "subject or SANs changed"
	ReasonExpiring    Reason = "expires within 30 days"
	ReasonNotYetValid Reason = "not valid yet"
	ReasonRotation    Reason = "rotation requested"
)

// Issued is one certificate (re)issued by Ensure.
type Issued struct {
	ID     ID
	Reason Reason
}

// Changes tells the caller what Ensure changed, so that it redistributes
// exactly those files and restarts exactly the components using them.
type Changes struct {
	// Issued lists what was generated, sorted by ID: CAs (by kind) and
	// the service-account key only on the first run, leaves whenever
	// needed. For KindServiceAccount with ReasonKeyMismatch only the
	// public half was re-derived from the unchanged private key.
	Issued []Issued
	// Dropped lists the leaves of nodes no longer in the Input, sorted.
	Dropped []ID
}

// Empty reports whether nothing was issued or dropped.
func (c Changes) Empty() bool { return len(c.Issued) == 0 && len(c.Dropped) == 0 }

// Affects reports whether a file that node n needs (see Bundle.Files) was
// issued, so the caller must upload its files again.
func (c Changes) Affects(n Node) bool {
	needed := needs(n)
	for _, is := range c.Issued {
		if slices.Contains(needed, is.ID) {
			return true
		}
	}
	return false
}

// Ensure returns the PKI for in, reusing everything in prev (which may be
// nil on the first run) that is still right: CAs and the service-account
// key are never replaced, and a leaf is reissued only for one of the
// Reasons. prev is not modified. The error wraps ErrInvalidInput,
// ErrCorrupt or ErrCAExpired and says what to do.
func Ensure(prev *Bundle, in Input) (*Bundle, Changes, error) {
	in, serviceIP, err := in.normalize()
	if err != nil {
		return nil, Changes{}, err
	}
	if prev == nil {
		prev = &Bundle{}
	}
	now := in.Now()
	next := &Bundle{Certs: make(map[ID]Cert)}
	if prev.Incoming != nil || prev.Retiring != nil {
		rot := prev.clone()
		next.Incoming, next.Retiring = rot.Incoming, rot.Retiring
	}
	var ch Changes

	cas := make(map[Kind]*authority, 3)
	for _, k := range []Kind{KindClusterCA, KindEtcdCA, KindFrontProxyCA} {
		stored, _ := prev.CA(k)
		c, a, issued, err := ensureCA(k, stored, in, now)
		if err != nil {
			return nil, Changes{}, err
		}
		next.set(k, c)
		cas[k] = a
		if issued {
			ch.Issued = append(ch.Issued, Issued{ID: ID(k), Reason: ReasonMissing})
		}
	}

	// A key stored before its creation was recorded was made with the
	// first cluster CA, which no earlier singlecloud could rotate.
	born := cas[KindClusterCA].cert.NotBefore.Add(Backdate)
	sa, reason, err := ensureServiceAccount(prev.ServiceAccount, now, born)
	if err != nil {
		return nil, Changes{}, err
	}
	next.ServiceAccount = sa
	if reason != "" {
		ch.Issued = append(ch.Issued, Issued{ID: ID(KindServiceAccount), Reason: reason})
	}

	specs := plan(in, serviceIP)
	for _, id := range slices.Sorted(maps.Keys(specs)) {
		s := specs[id]
		ca := cas[s.ca]
		old := prev.Certs[id]
		reason, notAfter := check(old, s, ca, now)
		if reason == ReasonWrongCA && keepsRetiring(id) {
			// Phase 2 of a CA rotation: an API server keeps serving with
			// its old-CA certificate, which every client still trusts,
			// until the old CAs are dropped.
			if ra := prev.retiringAuthority(s.ca); ra != nil {
				if r, na := check(old, s, ra, now); r == "" {
					reason, notAfter = "", na
				}
			}
		}
		if reason == "" && issuedBefore(old, in.ReissueIssuedBefore) {
			reason = ReasonRotation
		}
		if reason == "" {
			old.NotAfter = notAfter
			next.Certs[id] = old
			continue
		}
		c, err := issue(s, ca, now, in.LeafValidity)
		if err != nil {
			return nil, Changes{}, fmt.Errorf("issue certificate %s: %w", id, err)
		}
		next.Certs[id] = c
		ch.Issued = append(ch.Issued, Issued{ID: id, Reason: reason})
	}
	for _, id := range slices.Sorted(maps.Keys(prev.Certs)) {
		if _, ok := specs[id]; !ok {
			ch.Dropped = append(ch.Dropped, id)
		}
	}
	slices.SortFunc(ch.Issued, func(a, b Issued) int { return cmp.Compare(a.ID, b.ID) })
	return next, ch, nil
}

// keepsRetiring reports whether the leaf id stays signed by a retiring CA
// until the old CAs are dropped: the API servers' serving certificates,
// which clients holding a kubeconfig from before the rotation verify with
// the old CA alone.
func keepsRetiring(id ID) bool {
	k, _ := id.Split()
	return k == KindAPIServer
}

// ensureCA returns the stored CA of kind k, checked, or a new one when
// none is stored; issued reports the latter.
func ensureCA(k Kind, stored Cert, in Input, now time.Time) (c Cert, a *authority, issued bool, err error) {
	if stored.IsZero() {
		c, a, err := newCA(k, in.ClusterName, now, in.CAValidity)
		if err != nil {
			return Cert{}, nil, false, fmt.Errorf("create certificate authority %s: %w", k, err)
		}
		return c, a, true, nil
	}
	cert, key, err := parsePair(stored)
	if err == nil && !cert.IsCA {
		err = errors.New("the certificate is not a CA")
	}
	if err != nil {
		return Cert{}, nil, false, fmt.Errorf("certificate authority %s of cluster %s: %w: %w; restore the cluster "+
			"state from a backup (a new CA would invalidate every certificate on the nodes)", k, in.ClusterName, ErrCorrupt, err)
	}
	if !now.Before(cert.NotAfter) {
		return Cert{}, nil, false, fmt.Errorf("certificate authority %s of cluster %s expired on %s: %w; "+
			"the cluster's certificates must be rotated by hand", k, in.ClusterName, cert.NotAfter.Format(time.DateOnly), ErrCAExpired)
	}
	stored.NotAfter = cert.NotAfter
	return stored, &authority{kind: k, cert: cert, key: key}, false, nil
}

// ensureServiceAccount returns the stored service-account key pair, or a
// new one when none is stored (ReasonMissing). The public half is always
// re-derived from the private key (ReasonKeyMismatch when it differed).
func ensureServiceAccount(stored KeyPair, now, born time.Time) (KeyPair, Reason, error) {
	reason := Reason("")
	if stored.Key == "" {
		key, err := newKey()
		if err != nil {
			return KeyPair{}, "", fmt.Errorf("generate service-account key: %w", err)
		}
		if stored.Key, err = encodeKey(key); err != nil {
			return KeyPair{}, "", err
		}
		stored.Created = now.UTC()
		reason = ReasonMissing
	}
	if stored.Created.IsZero() {
		stored.Created = born.UTC()
	}
	key, err := parseKey(stored.Key)
	if err != nil {
		return KeyPair{}, "", fmt.Errorf("service-account key: %w: %w; restore the cluster state from a backup "+
			"(a new key would invalidate every service-account token)", ErrCorrupt, err)
	}
	pub, err := encodePublic(key)
	if err != nil {
		return KeyPair{}, "", err
	}
	if pub != stored.Public && reason == "" {
		reason = ReasonKeyMismatch
	}
	stored.Public = pub
	return stored, reason, nil
}

// check returns why the stored leaf c must be reissued to satisfy s, or ""
// and its NotAfter when it can stay.
func check(c Cert, s spec, ca *authority, now time.Time) (Reason, time.Time) {
	if c.IsZero() {
		return ReasonMissing, time.Time{}
	}
	cert, _, err := parsePair(c)
	switch {
	case errors.Is(err, errKeyMismatch):
		return ReasonKeyMismatch, time.Time{}
	case err != nil:
		return ReasonUnreadable, time.Time{}
	case !bytes.Equal(cert.RawIssuer, ca.cert.RawSubject) || cert.CheckSignatureFrom(ca.cert) != nil:
		return ReasonWrongCA, time.Time{}
	case !matches(cert, s):
		return ReasonChanged, time.Time{}
	case now.Before(cert.NotBefore):
		return ReasonNotYetValid, time.Time{}
	// A leaf never outlives its CA: one that expires with it is as good as
	// a new one would be.
	case cert.NotAfter.Before(now.Add(RenewBefore)) && cert.NotAfter.Before(ca.cert.NotAfter):
		return ReasonExpiring, time.Time{}
	}
	return "", cert.NotAfter
}

// issuedBefore reports whether c, a valid leaf, was issued before cutoff
// (never when cutoff is zero). A leaf's NotBefore is backdated by
// Backdate from when it was issued.
func issuedBefore(c Cert, cutoff time.Time) bool {
	if cutoff.IsZero() {
		return false
	}
	cert, err := c.X509()
	return err == nil && cert.NotBefore.Add(Backdate).Before(cutoff)
}

// matches reports whether cert has exactly the subject, SANs and usages of
// s.
func matches(cert *x509.Certificate, s spec) bool {
	if cert.IsCA || cert.Subject.CommonName != s.cn {
		return false
	}
	if !slices.Equal(slices.Sorted(slices.Values(cert.Subject.Organization)), s.orgs) {
		return false
	}
	if !slices.Equal(slices.Sorted(slices.Values(cert.DNSNames)), s.dns) {
		return false
	}
	ips := make([]netip.Addr, 0, len(cert.IPAddresses))
	for _, ip := range cert.IPAddresses {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			return false
		}
		ips = append(ips, a.Unmap())
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	if !slices.Equal(ips, s.ips) {
		return false
	}
	return slices.Equal(slices.Sorted(slices.Values(cert.ExtKeyUsage)), slices.Sorted(slices.Values(s.usages)))
}
