// Package transport is zke's SSH transport: one authenticated, kept-alive
// SSH connection per node, over which zke runs commands, uploads files and
// reaches sockets and ports on the node (the Docker Engine API on
// /var/run/docker.sock, component health endpoints).
//
// Guarantees:
//   - Every wait is bounded: the TCP dial by Options.DialTimeout, the SSH
//     handshake and authentication by a connection deadline
//     (Options.HandshakeTimeout) that is cleared once authenticated, dial
//     retries by Options.DialAttempts and a capped backoff, and everything
//     by the caller's context. A peer that stops answering is detected by
//     keepalive requests and the client is closed.
//   - Host keys are pinned: a Target with an empty HostKey trusts the key the
//     node presents and Client.HostKey returns it for the caller to store in
//     the cluster state; a Target with a HostKey refuses any other key with a
//     *HostKeyMismatchError.
//   - Cancelling the context of Exec kills the remote command, even on a
//     server that ignores signal requests (see exec.go).
//   - Uploads are atomic (temporary file, then posix-rename) and the file
//     has its final mode before any data is written.
//   - Failures are classified once, where they enter: errors.Is matches
//     ErrUnreachable, ErrHandshake, ErrAuthFailed, ErrHostKeyMismatch,
//     ErrNoDockerAccess, ErrForward, ErrConnectionLost; errors.As finds
//     *NodeError (node, address, operation and a hint saying what to fix),
//     *HostKeyMismatchError and *ExitError. Messages never carry key
//     material.
//   - Close is idempotent and returns after every goroutine of the client
//     has stopped.
//
// The package knows nothing of HTTP or of where cluster state is stored.
package transport
