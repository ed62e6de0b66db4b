// Package operators is seed 001's operator client: one Operator interface
// over kinds of environment (a Kubernetes cluster, a group of hosts), a
// Registry mapping each environment to its operator, and a Factory that
// creates the right operator for an environment's kind. The operators of
// each kind live in their own packages (operators/kubernetes,
// operators/docker); this package knows only their shape.
package operators

import (
	"context"
	"errors"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Operator runs applications in one environment. Every method is
// level-based: Apply makes the environment hold exactly what the request
// describes (creating, updating and removing what the application owns,
// and nothing else), however often it is called; Uninstall removes every
// object the application owns and nothing else. Both are bounded by ctx.
type Operator interface {
	// Apply makes the application run as req says.
	Apply(ctx context.Context, req *model.ApplyRequest) (*model.ApplyResponse, error)
	// GetApplicationStatus returns the application's health levels.
	GetApplicationStatus(ctx context.Context, app string) (*model.ApplicationStatus, error)
	// Uninstall removes everything the application owns.
	Uninstall(ctx context.Context, app string) error
	// HealthCheck says whether the environment can take work now.
	HealthCheck(ctx context.Context) error
	// GetType returns the environment kind the operator serves.
	GetType() string
}

// ErrEnvironmentNotReady wraps an error that says the environment exists
// but cannot take work now (a cluster being updated, every host
// unreachable): work on it waits and is retried.
var ErrEnvironmentNotReady = errors.New("environment not ready")

// ErrEnvironmentGone wraps an error that says the environment no longer
// exists: nothing can run or be removed there.
var ErrEnvironmentGone = errors.New("environment gone")

// ErrRefused wraps an error that says the environment refuses the request
// as it is (an object of that name that singlecloud does not own): retrying
// does not help, the admin must change the request or the environment.
var ErrRefused = errors.New("refused by the environment")
