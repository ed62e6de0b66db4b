package runtime

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinels, matched with errors.Is.
var (
	// ErrDaemonUnreachable: nothing answers on the Docker socket (missing,
	// refused, connection dropped). Wrapped in a *DaemonError with a hint.
	ErrDaemonUnreachable = errors.New("docker daemon unreachable")
	// ErrPermission: the socket exists but the user may not connect to
	// it. Wrapped in a *DaemonError with a hint.
	ErrPermission = errors.New("permission denied on the docker socket")
	// ErrAPIVersion: the daemon is too old (or too new) to share an API
	// version with this client.
	ErrAPIVersion = errors.New("unsupported docker API version")
	// ErrNotFound: the container or image does not exist. An *APIError
	// with status 404 matches it.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the daemon refused the operation because of the
	// object's state or a name clash. An *APIError with status 409
	// matches it.
	ErrConflict = errors.New("conflict")
	// ErrInvalidSpec: a ContainerSpec, bind, device or image reference is
	// malformed; the message names the field.
	ErrInvalidSpec = errors.New("invalid container spec")
	// ErrForeign: a container is in the way that zke did not create (or
	// that belongs to another cluster). errors.As finds the
	// *ForeignContainerError.
	ErrForeign = errors.New("container not managed by this cluster")
)

// DaemonError is a failure to talk to the daemon at all.
type DaemonError struct {
	// Node and Socket say which daemon.
	Node, Socket string
	// Op is what was attempted ("ping", "inspect container etcd").
	Op string
	// Kind is ErrDaemonUnreachable or ErrPermission.
	Kind error
	// Err is the underlying failure (from the Dialer or the connection).
	Err error
	// Hint says what to fix.
	Hint string
}

// Error reads "docker on node1 (/var/run/docker.sock): ping: docker daemon
// unreachable: <cause>: is docker running on node1?".
func (e *DaemonError) Error() string {
	return fmt.Sprintf("docker on %s (%s): %s: %v: %v: %s", e.Node, e.Socket, e.Op, e.Kind, e.Err, e.Hint)
}

// Unwrap returns the kind and the cause, so that errors.Is matches both
// the sentinel and whatever the Dialer reported.
func (e *DaemonError) Unwrap() []error { return []error{e.Kind, e.Err} }

// APIError is an error status returned by the Docker API.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the daemon's message.
	Message string
}

// Error reads "docker API: 404 Not Found: No such container: etcd".
func (e *APIError) Error() string {
	return fmt.Sprintf("docker API: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Is makes a 404 match ErrNotFound and a 409 ErrConflict.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	}
	return false
}

// StreamError is an error the daemon reported inside a streamed response
// (image pull or load) after it had answered 200 OK.
type StreamError struct {
	// Op is the operation ("pull registry.example/x:1", "load image").
	Op string
	// Message is the daemon's message.
	Message string
}

// Error reads "pull x:1: <message>".
func (e *StreamError) Error() string { return e.Op + ": " + e.Message }

// ImageMissingError says an image a container needs is not on the node.
// The caller pulls it or loads the image archive, then retries.
type ImageMissingError struct {
	// Image is the reference, Node the node.
	Image, Node string
}

// Error says what to do.
func (e *ImageMissingError) Error() string {
	return fmt.Sprintf("image %s is not present on %s: pull it from the registry or load the image archive on the node", e.Image, e.Node)
}

// Is makes it match ErrNotFound.
func (e *ImageMissingError) Is(target error) bool { return target == ErrNotFound }

// ForeignContainerError reports a container zke may not touch: it was not
// created by zke, or belongs to another cluster.
type ForeignContainerError struct {
	// Name is the container's name, Node the node.
	Name, Node string
	// Owner is the io.zke.cluster label of a zke container of another
	// cluster; empty when zke did not create it.
	Owner string
}

// Error says whose container it is and what to do.
func (e *ForeignContainerError) Error() string {
	owner := "was not created by zke"
	if e.Owner != "" {
		owner = "belongs to zke cluster " + e.Owner
	}
	return fmt.Sprintf("container %s on %s %s: rename or remove it (docker rm -f %s) and retry", e.Name, e.Node, owner, e.Name)
}

// Is makes it match ErrForeign.
func (e *ForeignContainerError) Is(target error) bool { return target == ErrForeign }

// ExitError reports a job container that exited with a non-zero code.
type ExitError struct {
	// Name is the job's container name, Node the node.
	Name, Node string
	// Code is the exit code.
	Code int
	// Logs is the tail of the job's output, for the message.
	Logs string
}

// maxErrLogs bounds how much of a job's output an ExitError message shows.
const maxErrLogs = 2048

// Error reads "job etcd-snapshot on node1 exited with code 3: <log tail>".
func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s on %s exited with code %d", e.Name, e.Node, e.Code)
	logs := strings.TrimSpace(e.Logs)
	if len(logs) > maxErrLogs {
		logs = "..." + logs[len(logs)-maxErrLogs:]
	}
	if logs != "" {
		b.WriteString(": ")
		b.WriteString(logs)
	}
	return b.String()
}
