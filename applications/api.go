package applications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/validation"
)

// statusTimeout bounds one status read from an environment.
const statusTimeout = 20 * time.Second

// List returns env's application instances, sorted by name.
func (m *Manager) List(env string) ([]Instance, error) {
	if _, err := m.Environment(env); err != nil {
		if !m.hasInstances(env) {
			return nil, err
		}
	}
	m.mu.Lock()
	var insts []*instance
	for key, inst := range m.instances {
		if e, _ := splitKey(key); e == env {
			insts = append(insts, inst)
		}
	}
	m.mu.Unlock()
	out := make([]Instance, 0, len(insts))
	for _, inst := range insts {
		out = append(out, inst.view())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// hasInstances reports whether env holds instances (its cluster may be
// gone: they stay visible so that they can be uninstalled).
func (m *Manager) hasInstances(env string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.instances {
		if e, _ := splitKey(key); e == env {
			return true
		}
	}
	return false
}

func (i *instance) view() Instance {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.rec.view(i.progress)
}

// Get returns env's app.
func (m *Manager) Get(env, app string) (Instance, error) {
	inst, err := m.lookup(env, app)
	if err != nil {
		return Instance{}, err
	}
	return inst.view(), nil
}

func (m *Manager) lookup(env, app string) (*instance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inst, ok := m.instances[instanceKey(env, app)]
	if !ok {
		return nil, fmt.Errorf("application %s in environment %s: %w", app, env, ErrNotFound)
	}
	return inst, nil
}

// Apply sets app's spec in env: a new instance, or a changed spec, goes to
// Waiting and is installed; the same spec again changes nothing, except
// that a Failed instance is installed again. An instance being
// uninstalled refuses a spec until it is Uninstalled.
func (m *Manager) Apply(ctx context.Context, actor, env, app string, spec model.ApplicationSpec) (Instance, error) {
	if err := validation.ValidateApplication(app, spec); err != nil {
		return Instance{}, err
	}
	if _, err := m.Environment(env); err != nil {
		return Instance{}, err
	}
	key := instanceKey(env, app)
	hash := specHash(spec)
	m.mu.Lock()
	inst, ok := m.instances[key]
	fresh := !ok
	if fresh {
		inst = &instance{rec: record{Env: env, App: app}}
		m.instances[key] = inst
	}
	m.mu.Unlock()
	cur := inst.snapshot()
	if _, ok := can(cur.Phase, evApply); !ok {
		return Instance{}, &PhaseError{Instance: key, Event: "take a new spec", Phase: cur.Phase}
	}
	// The same spec again changes nothing while the instance pursues it;
	// after a failure or an uninstall it is how an admin installs again.
	if !fresh && cur.SpecHash == hash && pursues(cur.Phase) {
		return inst.view(), nil
	}
	err := m.transition(ctx, key, inst, evApply, change{actor: actor, message: "spec " + hash, edit: func(r *record) {
		r.Spec, r.SpecHash, r.UpdatedBy = spec, hash, actor
		r.Generation++
	}})
	if err != nil {
		if fresh {
			m.mu.Lock()
			delete(m.instances, key)
			m.mu.Unlock()
		}
		return Instance{}, err
	}
	view := inst.view()
	m.kick(key)
	return view, nil
}

// Uninstall starts removing env's app. An Uninstalled instance is purged:
// its record and log go, and a later GET says it does not exist.
func (m *Manager) Uninstall(ctx context.Context, actor, env, app string) (inst Instance, purged bool, err error) {
	in, err := m.lookup(env, app)
	if err != nil {
		return Instance{}, false, err
	}
	key := instanceKey(env, app)
	if in.snapshot().Phase == PhaseUninstalling {
		// Already on its way: DELETE is idempotent.
		return in.view(), false, nil
	}
	if _, ok := can(in.snapshot().Phase, evForget); ok {
		return m.purge(key, in)
	}
	if err := m.transition(ctx, key, in, evUninstall, change{actor: actor}); err != nil {
		return Instance{}, false, err
	}
	view := in.view()
	m.kick(key)
	return view, false, nil
}

// purge forgets an Uninstalled instance and its log. The stored phase is
// checked inside the deleting transaction, so a concurrent apply either
// lands first (and the purge is refused) or finds the record gone.
func (m *Manager) purge(key string, in *instance) (Instance, bool, error) {
	env, app := splitKey(key)
	view := in.view()
	err := m.opts.Store.Update(func(tx storage.Tx) error {
		if err := forgettable(tx, key); err != nil {
			return err
		}
		if err := tx.DeletePrefix(storage.BucketApplicationLogs, logPrefix(env, app)); err != nil {
			return err
		}
		return tx.Delete(storage.BucketApplications, key)
	})
	if err != nil {
		return view, false, err
	}
	m.mu.Lock()
	m.forgetLocked(key)
	m.mu.Unlock()
	return view, true, nil
}

// forgettable checks, inside tx, that the stored instance at key may be
// forgotten (the state machine allows evForget from its phase).
func forgettable(tx storage.Reader, key string) error {
	b, err := tx.Get(storage.BucketApplications, key)
	if err != nil {
		return fmt.Errorf("application %s: %w", key, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("application %s: decode: %w", key, err)
	}
	if _, ok := can(r.Phase, evForget); !ok {
		return &PhaseError{Instance: key, Event: "be forgotten", Phase: r.Phase}
	}
	return nil
}

// forgetLocked drops key from memory once its rows are gone: later writes
// of holders of the instance are refused, and its live readers end. The
// caller holds m.mu.
func (m *Manager) forgetLocked(key string) {
	inst, ok := m.instances[key]
	if !ok {
		return
	}
	inst.mu.Lock()
	inst.removed = true
	inst.mu.Unlock()
	delete(m.instances, key)
	if cancel, ok := m.running[key]; ok {
		cancel()
	}
	m.closeFollowers(key)
}

// Retry installs a Failed instance again.
func (m *Manager) Retry(ctx context.Context, actor, env, app string) (Instance, error) {
	in, err := m.lookup(env, app)
	if err != nil {
		return Instance{}, err
	}
	key := instanceKey(env, app)
	if err := m.transition(ctx, key, in, evRetry, change{actor: actor}); err != nil {
		return Instance{}, err
	}
	view := in.view()
	m.kick(key)
	return view, nil
}

// StatusView is an instance's phase with its health in the environment.
type StatusView struct {
	model.ApplicationStatus
	Phase   Phase  `json:"phase"`
	Message string `json:"message,omitempty"`
}

// Status asks env's operator for app's health levels, bounded.
func (m *Manager) Status(ctx context.Context, env, app string) (StatusView, error) {
	in, err := m.lookup(env, app)
	if err != nil {
		return StatusView{}, err
	}
	rec := in.snapshot()
	view := StatusView{Phase: rec.Phase, Message: rec.Message, ApplicationStatus: model.ApplicationStatus{App: app, Versions: []model.VersionStatus{}}}
	if rec.Phase == PhaseUninstalled {
		return view, nil
	}
	op, err := m.operator(env)
	if err != nil {
		return StatusView{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	sctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	st, err := op.GetApplicationStatus(sctx, app)
	if err != nil {
		return StatusView{}, fmt.Errorf("application %s in environment %s: read its status: %w: %v", app, env, ErrUnavailable, err)
	}
	if pursues(rec.Phase) || rec.Phase == PhaseFailed {
		st = againstDesired(st, applyRequest(app, rec.Spec, rec.SpecHash))
	}
	view.ApplicationStatus = *st
	return view, nil
}

// operator returns env's operator.
func (m *Manager) operator(env string) (operators.Operator, error) {
	view, err := m.Environment(env)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", operators.ErrEnvironmentGone, err)
		}
		return nil, err
	}
	return m.opts.Operators.Operator(view.Environment, m.desired(env))
}

// desired returns what should run in env: each instance's spec, unless
// it is being (or was) uninstalled.
func (m *Manager) desired(env string) operators.Desired {
	return func(app string) (*model.ApplyRequest, bool) {
		in, err := m.lookup(env, app)
		if err != nil {
			return nil, false
		}
		rec := in.snapshot()
		if rec.Phase == PhaseUninstalling || rec.Phase == PhaseUninstalled || rec.Phase == PhaseNone {
			return nil, false
		}
		return applyRequest(app, rec.Spec, rec.SpecHash), true
	}
}
