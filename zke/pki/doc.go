// Package pki owns the certificates and keys of a cluster that zke installs:
// three certificate authorities (cluster, etcd, front proxy), every leaf
// certificate the Kubernetes and etcd components need, and the
// service-account signing key, which is separate from every TLS key.
//
// The package is pure: it does no I/O beyond what the caller hands it
// (randomness comes from crypto/rand, time from Input.Now). Ensure takes the
// Bundle of the previous run — stored by the caller in the cluster state —
// and the desired Input, and returns a Bundle in which
//
//   - a certificate authority and the service-account key, once generated,
//     never change (a retry or an update keeps them byte for byte);
//   - a leaf is reissued only when it is missing, unreadable, not signed by
//     its authority, does not match its key, no longer carries the subject
//     or SANs the Input asks for, or expires within RenewBefore;
//   - the leaves of nodes that left the Input are dropped.
//
// The Changes it returns name what was issued and dropped, so the caller
// redistributes only those files. Files lists what one node needs on disk
// given its roles, and KubeconfigFor and ClientTLSConfig turn a client
// certificate into a kubeconfig or a TLS config for health checks.
//
// Keys are ECDSA P-256 (fast to generate, accepted by every component,
// including kube-apiserver for service-account tokens, ES256); private keys
// are PEM-encoded PKCS #8 inside the Bundle, which the caller must keep
// sealed at rest.
package pki
