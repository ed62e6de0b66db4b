package operators

import (
	"context"
	"fmt"
	"sync"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Desired returns the last request applied for app in one environment:
// what should run there. Operators that keep no desired state of their
// own (containers on hosts) compute their levels against it.
type Desired func(app string) (*model.ApplyRequest, bool)

// Constructor creates the operator of one environment of its kind; desired
// reads the environment's applications from their owner.
type Constructor func(env model.Environment, desired Desired) (Operator, error)

// Factory creates the right operator for an environment's kind (seed 001's
// CreateOperatorFromEnvironment).
type Factory map[string]Constructor

// Create returns a new operator for env.
func (f Factory) Create(env model.Environment, desired Desired) (Operator, error) {
	c, ok := f[env.Kind]
	if !ok {
		return nil, fmt.Errorf("environment %s: no operator for kind %q", env.Name, env.Kind)
	}
	op, err := c(env, desired)
	if err != nil {
		return nil, fmt.Errorf("environment %s: create its %s operator: %w", env.Name, env.Kind, err)
	}
	return op, nil
}

// Registry maps environments to their operators (seed 001's Manager): the
// first use of an environment creates its operator through the Factory;
// an environment whose definition changed (a new selector) gets a new
// one. It is safe for concurrent use.
type Registry struct {
	factory Factory

	mu  sync.Mutex
	ops map[string]registered
}

type registered struct {
	env model.Environment
	op  Operator
}

// NewRegistry returns an empty registry creating operators with f.
func NewRegistry(f Factory) *Registry {
	return &Registry{factory: f, ops: map[string]registered{}}
}

// Operator returns env's operator, creating it on first use.
func (r *Registry) Operator(env model.Environment, desired Desired) (Operator, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reg, ok := r.ops[env.Name]; ok && reg.env == env {
		return reg.op, nil
	}
	op, err := r.factory.Create(env, desired)
	if err != nil {
		return nil, err
	}
	r.ops[env.Name] = registered{env: env, op: op}
	return op, nil
}

// RegisterOperator sets the operator of env, replacing any (seed 001).
func (r *Registry) RegisterOperator(env model.Environment, op Operator) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[env.Name] = registered{env: env, op: op}
}

// Forget drops the operator of the named environment (it was deleted).
func (r *Registry) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ops, name)
}

// GetApplicationStatus asks env's operator for app's status (seed 001).
func (r *Registry) GetApplicationStatus(ctx context.Context, env model.Environment, desired Desired, app string) (*model.ApplicationStatus, error) {
	op, err := r.Operator(env, desired)
	if err != nil {
		return nil, err
	}
	return op.GetApplicationStatus(ctx, app)
}
