package pki

import "errors"

var (
	// ErrInvalidInput reports an Input that cannot be turned into
	// certificates: a missing cluster name or domain, a bad service CIDR, a
	// node without name or address, no controlplane or etcd node. Each
	// violation is wrapped separately (errors.Join) and names its field.
	ErrInvalidInput = errors.New("invalid PKI input")
	// ErrCorrupt reports a stored certificate authority or service-account
	// key that cannot be read or whose key does not match its certificate.
	// Ensure never replaces those silently, since every node trusts them:
	// the state must be restored from a backup.
	ErrCorrupt = errors.New("corrupt PKI bundle")
	// ErrCAExpired reports a certificate authority past its NotAfter: no
	// leaf it signs can be trusted, and this package never rotates a CA on
	// its own.
	ErrCAExpired = errors.New("certificate authority expired")
	// ErrMissing reports a certificate or key absent from a Bundle, for
	// example Files asked for a node that Ensure has not seen yet.
	ErrMissing = errors.New("missing from PKI bundle")

	// ErrRotationPhase reports a CA rotation phase asked of a Bundle in
	// another phase (BeginCARotation while one is in progress, say).
	ErrRotationPhase = errors.New("the certificate authorities are not in the phase this step expects")

	// errKeyMismatch tells parsePair's callers that a certificate and key
	// were readable but do not belong together.
	errKeyMismatch = errors.New("private key does not match the certificate")
)
