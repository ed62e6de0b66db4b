package pki

import (
	"fmt"
	"strings"
)

// CASet is one generation of the cluster's three certificate
// authorities.
type CASet struct {
	ClusterCA    Cert `json:"clusterCA"`
	EtcdCA       Cert `json:"etcdCA"`
	FrontProxyCA Cert `json:"frontProxyCA"`
}

// CA returns the authority of kind k in the set, or the zero Cert.
func (s *CASet) CA(k Kind) Cert {
	if s == nil {
		return Cert{}
	}
	switch k {
	case KindClusterCA:
		return s.ClusterCA
	case KindEtcdCA:
		return s.EtcdCA
	case KindFrontProxyCA:
		return s.FrontProxyCA
	}
	return Cert{}
}

// caKinds are the kinds of the certificate authorities, in the order
// they are listed.
func caKinds() []Kind { return []Kind{KindClusterCA, KindEtcdCA, KindFrontProxyCA} }

// A CA rotation goes through three phases, each rolled out to every node
// and every component restarted before the next begins, so that at no
// moment does a component present a certificate its peer does not trust:
//
//  1. trust (BeginCARotation): new CAs are made and trusted everywhere
//     beside the old ones (the trust bundle, Trust); the old ones still
//     sign, every leaf stays.
//  2. reissue (PromoteIncoming): the new CAs sign; Ensure reissues every
//     leaf from them. The old CAs stay trusted (Retiring), and the API
//     servers keep serving with their old-CA certificate, so that a
//     kubeconfig handed out before the rotation keeps working.
//  3. drop (DropRetiring): the old CAs are trusted no more; Ensure
//     reissues the API servers' serving certificates from the new CA.
//     A client certificate of the old CAs (an old admin kubeconfig) is
//     refused from then on.
//
// Every phase is a pure function of the Bundle, so a rotation that was
// interrupted carries on from the phase its stored Bundle is in.

// RotatingCA reports whether b is in the middle of a CA rotation
// (phase 1 or 2).
func (b *Bundle) RotatingCA() bool { return b.Incoming != nil || b.Retiring != nil }

// BeginCARotation returns a copy of b with a new generation of CAs, made
// from in (its cluster name, clock and CA validity), trusted but not yet
// signing: phase 1. b must not be rotating already.
func (b *Bundle) BeginCARotation(in Input) (*Bundle, error) {
	if b.RotatingCA() {
		return nil, fmt.Errorf("begin a CA rotation: %w (one is in progress)", ErrRotationPhase)
	}
	in, _, err := in.normalize()
	if err != nil {
		return nil, err
	}
	next := b.clone()
	next.Incoming = &CASet{}
	for _, k := range caKinds() {
		c, _, err := newCA(k, in.ClusterName, in.Now(), in.CAValidity)
		if err != nil {
			return nil, fmt.Errorf("create the new certificate authority %s: %w", k, err)
		}
		next.Incoming.set(k, c)
	}
	return next, nil
}

// PromoteIncoming returns a copy of b in phase 2: the incoming CAs sign,
// the ones they replace are kept, without their keys, as Retiring. b must
// be in phase 1.
func (b *Bundle) PromoteIncoming() (*Bundle, error) {
	if b.Incoming == nil || b.Retiring != nil {
		return nil, fmt.Errorf("promote the new certificate authorities: %w (none is waiting)", ErrRotationPhase)
	}
	next := b.clone()
	next.Retiring = &CASet{}
	for _, k := range caKinds() {
		old, _ := b.CA(k)
		// The old keys sign nothing any more: forget them.
		next.Retiring.set(k, Cert{Cert: old.Cert, NotAfter: old.NotAfter})
		next.set(k, b.Incoming.CA(k))
	}
	next.Incoming = nil
	return next, nil
}

// DropRetiring returns a copy of b in which the retired CAs are no longer
// trusted: phase 3. b must be in phase 2.
func (b *Bundle) DropRetiring() (*Bundle, error) {
	if b.Retiring == nil {
		return nil, fmt.Errorf("drop the old certificate authorities: %w (none is retiring)", ErrRotationPhase)
	}
	next := b.clone()
	next.Retiring = nil
	return next, nil
}

// Trust is the PEM a component verifies peers of kind k's authority with:
// the CA, and during a CA rotation the other generation too.
func (b *Bundle) Trust(k Kind) string {
	c, _ := b.CA(k)
	parts := []string{c.Cert}
	for _, s := range []*CASet{b.Incoming, b.Retiring} {
		if o := s.CA(k); o.Cert != "" {
			parts = append(parts, o.Cert)
		}
	}
	for i, p := range parts {
		if !strings.HasSuffix(p, "\n") {
			parts[i] = p + "\n"
		}
	}
	return strings.Join(parts, "")
}

// set stores c as the CA of kind k.
func (s *CASet) set(k Kind, c Cert) {
	switch k {
	case KindClusterCA:
		s.ClusterCA = c
	case KindEtcdCA:
		s.EtcdCA = c
	case KindFrontProxyCA:
		s.FrontProxyCA = c
	}
}

// clone returns a copy of b that shares nothing mutable with it.
func (b *Bundle) clone() *Bundle {
	next := *b
	next.Certs = make(map[ID]Cert, len(b.Certs))
	for id, c := range b.Certs {
		next.Certs[id] = c
	}
	if b.Incoming != nil {
		s := *b.Incoming
		next.Incoming = &s
	}
	if b.Retiring != nil {
		s := *b.Retiring
		next.Retiring = &s
	}
	return &next
}

// retiringAuthority returns the retiring CA of kind k, parsed, or nil.
func (b *Bundle) retiringAuthority(k Kind) *authority {
	c := b.Retiring.CA(k)
	if c.Cert == "" {
		return nil
	}
	cert, err := c.X509()
	if err != nil {
		return nil
	}
	return &authority{kind: k, cert: cert}
}
