// Package kubernetes is the operator of a Kubernetes environment: it runs
// an application's versions as one Deployment per version and one Service
// shared by all of them, applied with server-side apply so that the cluster
// holds exactly what the last request described.
//
// Everything the operator makes carries the labels
//
//	app.singlecloud.io/managed-by=singlecloud
//	app.singlecloud.io/name=<app>
//
// (Deployments and their pods also app.singlecloud.io/version=<version>),
// and the operator only ever updates or deletes objects that carry them:
// an object of the same name without them makes Apply fail (ErrNotManaged)
// instead of being taken over. Uninstall and GetApplicationStatus only get
// an application's name, so they find its objects by these labels in every
// namespace.
//
// Namespaces are created when missing (labelled managed-by=singlecloud, so
// that people can tell where they came from) but never deleted: a namespace
// may hold other people's objects, and deleting one is not undoable.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
)

// Labels and annotations singlecloud controls on the objects it makes.
const (
	// LabelManagedBy marks an object as made by singlecloud; its value is
	// ManagedBy.
	LabelManagedBy = "app.singlecloud.io/managed-by"
	// LabelName is the name of the application an object belongs to.
	LabelName = "app.singlecloud.io/name"
	// LabelVersion is the application version a Deployment and its pods
	// run.
	LabelVersion = "app.singlecloud.io/version"
	// AnnotationSpecHash records, on each Deployment, the hash of the
	// application spec it was applied from.
	AnnotationSpecHash = "app.singlecloud.io/spec-hash"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "singlecloud"
)

// Defaults of Options.
const (
	DefaultMinReady     = 3 * time.Second
	DefaultFieldManager = "singlecloud"
)

// ErrNotManaged wraps the error of an Apply that would have to change an
// object singlecloud did not make (or that belongs to another
// application): the admin must rename the application or remove the
// object. Retrying does not help.
var ErrNotManaged = fmt.Errorf("object not managed by this application: %w", operators.ErrRefused)

// ErrInvalidRequest wraps the error of an Apply whose request cannot be
// turned into Kubernetes objects (a resource quantity that does not parse,
// an unknown pull policy). Retrying does not help.
var ErrInvalidRequest = fmt.Errorf("invalid apply request: %w", operators.ErrRefused)

// Options tunes New.
type Options struct {
	// Clock is the time source of the readiness rule; nil is time.Now.
	Clock func() time.Time
	// MinReady is how long a pod's Ready condition must have been true
	// for the pod to count as ready (it is also the Deployments'
	// minReadySeconds, rounded up); 0 is DefaultMinReady.
	MinReady time.Duration
	// FieldManager is the server-side apply field manager; "" is
	// DefaultFieldManager.
	FieldManager string
}

// operator is the Operator of one Kubernetes environment.
type operator struct {
	env          string
	client       func() (kubeclient.Interface, error)
	clock        func() time.Time
	minReady     time.Duration
	fieldManager string
}

// New returns the operator of the Kubernetes environment env. client is
// called at the start of every method for the cluster's clientset; an error
// from it (which already wraps operators.ErrEnvironmentNotReady or
// ErrEnvironmentGone when it says so) is returned wrapped, so errors.Is
// still sees it.
func New(env string, client func() (kubeclient.Interface, error), opts Options) operators.Operator {
	o := &operator{env: env, client: client, clock: opts.Clock, minReady: opts.MinReady, fieldManager: opts.FieldManager}
	if o.clock == nil {
		o.clock = time.Now
	}
	if o.minReady <= 0 {
		o.minReady = DefaultMinReady
	}
	if o.fieldManager == "" {
		o.fieldManager = DefaultFieldManager
	}
	return o
}

// GetType returns model.EnvironmentKubernetes.
func (o *operator) GetType() string { return model.EnvironmentKubernetes }

// clientset returns the environment's clientset, its error wrapped with
// the environment's name.
func (o *operator) clientset() (kubeclient.Interface, error) {
	cs, err := o.client()
	if err != nil {
		return nil, fmt.Errorf("kubernetes environment %s: %w", o.env, err)
	}
	if cs == nil {
		return nil, fmt.Errorf("kubernetes environment %s: %w: no client", o.env, operators.ErrEnvironmentNotReady)
	}
	return cs, nil
}

// HealthCheck asks the API server for its version, bounded by ctx. A
// failure wraps operators.ErrEnvironmentNotReady (unless ctx itself ended).
func (o *operator) HealthCheck(ctx context.Context) error {
	cs, err := o.clientset()
	if err != nil {
		return err
	}
	if err := serverVersion(ctx, cs); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("kubernetes environment %s: health check: %w", o.env, err)
		}
		return fmt.Errorf("kubernetes environment %s: %w: GET /version: %w", o.env, operators.ErrEnvironmentNotReady, err)
	}
	return nil
}

// serverVersion does GET /version with ctx. Discovery's ServerVersion
// takes no context, so the request is made with the discovery REST client
// when there is one (the fake clientset has none: then ServerVersion runs
// in a goroutine that ctx may abandon).
func serverVersion(ctx context.Context, cs kubeclient.Interface) error {
	if rc := cs.Discovery().RESTClient(); rc != nil {
		_, err := rc.Get().AbsPath("/version").Do(ctx).Raw()
		return err
	}
	done := make(chan error, 1)
	go func() {
		_, err := cs.Discovery().ServerVersion()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// apiError wraps err, an API request's error, with what was being done;
// when err says the API server cannot answer now (unreachable, overloaded,
// timing out) the result also wraps operators.ErrEnvironmentNotReady, so
// that the work is retried instead of failed.
func (o *operator) apiError(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if transient(err) {
		return fmt.Errorf("kubernetes environment %s: %w: %s: %w", o.env, operators.ErrEnvironmentNotReady, what, err)
	}
	return fmt.Errorf("kubernetes environment %s: %s: %w", o.env, what, err)
}

// transient says whether err is one the API server may not give on a
// later try: a connection that failed, or a status that says "later".
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
		return true
	}
	if utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr)
}
