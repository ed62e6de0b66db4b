// Package runtime is zke's node runtime: it runs the cluster's components
// as Docker containers on one node, through the Docker Engine HTTP API
// reached over a connection the caller dials (in production an SSH client
// that dials the node's /var/run/docker.sock; in tests a net.Dialer).
//
// Guarantees:
//   - Ownership: every container the package creates carries the labels
//     io.zke.managed=true, io.zke.cluster=<cluster> and
//     io.zke.spec-hash=<sha256 of the canonical spec>. Remove, RemoveAll and
//     the replacement done by Ensure touch only containers with those
//     labels (of the right cluster); a foreign container in the way is
//     reported with a *ForeignContainerError and left alone.
//   - Idempotence: Ensure compares the spec hash and does nothing when the
//     container already runs the same spec.
//   - Bounded waits: every API call runs under the caller's context and,
//     unless it streams (image pull and load, waiting for a job), a
//     per-call timeout (Options.Timeout). A cancelled job container is
//     killed and removed under a fresh bounded context. Close releases the
//     idle connections; no goroutine outlives a call.
//   - Classified failures: errors.Is matches ErrDaemonUnreachable,
//     ErrPermission, ErrAPIVersion, ErrNotFound, ErrConflict and
//     ErrInvalidSpec; errors.As finds *DaemonError (node, socket and a hint),
//     *APIError, *ImageMissingError, *ForeignContainerError, *StreamError
//     and, through JobResult.Err, *ExitError. Registry credentials are
//     never logged or put in an error.
//
// The API version is negotiated with the daemon (/version): the highest
// version both speak, at least 1.41 (Docker 20.10).
package runtime
