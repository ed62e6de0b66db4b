package clustermanager

import (
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
)

var (
	// ErrNotFound reports a cluster that does not exist.
	ErrNotFound = errors.New("cluster not found")
	// ErrDuplicate reports a create or import of a name already in use.
	ErrDuplicate = errors.New("cluster already exists")
	// ErrNotReady reports a sub-resource request on a cluster that is not
	// in the ready list; the error is a *NotReadyError carrying the status.
	ErrNotReady = errors.New("cluster is not ready")
	// ErrPermanent marks connection failures that retrying cannot fix: an
	// unusable kubeconfig, a certificate the CA does not sign, rejected
	// credentials. The cluster goes Unavailable with the reason.
	ErrPermanent = errors.New("permanent connection failure")
	// ErrUnreachable reports a live request to a ready cluster whose API
	// server did not answer.
	ErrUnreachable = errors.New("cluster unreachable")
)

// NotReadyError says which state kept a cluster out of the ready list.
type NotReadyError struct {
	Cluster string
	Status  fsm.State
}

func (e *NotReadyError) Error() string {
	return fmt.Sprintf("cluster %s is not ready (status %s)", e.Cluster, e.Status)
}

// Unwrap lets errors.Is(err, ErrNotReady) match.
func (e *NotReadyError) Unwrap() error { return ErrNotReady }

// permanentError wraps a connection failure that must not be retried.
type permanentError struct {
	reason string
	err    error
}

func (e *permanentError) Error() string { return e.reason }

// Unwrap exposes both the cause and ErrPermanent to errors.Is/As.
func (e *permanentError) Unwrap() []error { return []error{ErrPermanent, e.err} }

// notFound is the ErrNotFound of cluster name.
func notFound(name string) error { return fmt.Errorf("cluster %s: %w", name, ErrNotFound) }
