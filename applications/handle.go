package applications

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
)

// Handler results: how soon the instance is looked at again.
const (
	// done: the phase needs nothing more until something changes.
	done time.Duration = 0
	// again: the phase moved; handle the next one at once.
	again time.Duration = -1
)

// notReadyRetry is how long work on an environment that cannot take it
// (a cluster being updated, every host unreachable) waits before trying
// again.
const notReadyRetry = 5 * time.Second

// handle does the one thing inst's phase asks for (seed 000: one phase per
// call) and returns when to look again. An error is retried with backoff.
func (m *Manager) handle(ctx context.Context, key string, inst *instance) (time.Duration, error) {
	rec := inst.snapshot()
	var after time.Duration
	var err error
	switch rec.Phase {
	case PhaseWaiting:
		err = m.transition(ctx, key, inst, evInstall, change{generation: rec.Generation, message: fmt.Sprintf("installing spec %s (generation %d)", rec.SpecHash, rec.Generation)})
		after = again
	case PhaseInstalling:
		after, err = m.install(ctx, key, inst, rec)
	case PhaseInstalled:
		after, err = m.reapply(ctx, key, inst, rec)
	case PhaseUninstalling:
		after, err = m.uninstall(ctx, key, inst, rec)
	}
	if ctx.Err() != nil {
		// Interrupted: whoever interrupted queued the instance again.
		return done, nil
	}
	var pe *PhaseError
	if errors.As(err, &pe) {
		// The phase moved under the handler (a new spec, an
		// uninstall); the instance is queued again.
		return done, nil
	}
	return after, err
}

// install applies the spec once per generation, then watches the levels
// until every desired replica is ready (Installed) or the install's bound
// passes (Failed, naming what is not ready).
func (m *Manager) install(ctx context.Context, key string, inst *instance, rec record) (time.Duration, error) {
	deadline := rec.PhaseSince.Add(installTimeout(rec.Spec))
	now := m.opts.Clock.Now()
	op, err := m.operator(rec.Env)
	if err != nil {
		return m.installTrouble(ctx, key, inst, rec, deadline, now, err)
	}
	inst.mu.Lock()
	applied := inst.applied == rec.Generation
	inst.mu.Unlock()
	if !applied {
		cctx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
		resp, err := op.Apply(cctx, applyRequest(rec.App, rec.Spec, rec.SpecHash))
		cancel()
		if err != nil {
			return m.installTrouble(ctx, key, inst, rec, deadline, now, err)
		}
		inst.mu.Lock()
		inst.applied = rec.Generation
		inst.mu.Unlock()
		m.note(key, inst, "info", "applied: "+resp.Message)
	}
	sctx, cancel := context.WithTimeout(ctx, statusTimeout)
	st, err := op.GetApplicationStatus(sctx, rec.App)
	cancel()
	if err != nil {
		return m.installTrouble(ctx, key, inst, rec, deadline, now, err)
	}
	st = againstDesired(st, applyRequest(rec.App, rec.Spec, rec.SpecHash))
	summary := Summarize(st)
	inst.mu.Lock()
	changed := inst.progress != summary
	inst.progress = summary
	inst.mu.Unlock()
	if st.Healthy.Level == 100 {
		return done, m.transition(ctx, key, inst, evInstalled, change{generation: rec.Generation, message: summary, edit: func(r *record) { r.InstalledHash = r.SpecHash }})
	}
	if !now.Before(deadline) {
		return done, m.transition(ctx, key, inst, evInstallFailed, change{level: "error", generation: rec.Generation,
			message: fmt.Sprintf("not every replica was ready within %s: %s", installTimeout(rec.Spec), summary)})
	}
	if changed {
		m.note(key, inst, "info", summary)
	}
	return m.opts.PollInterval, nil
}

// installTrouble handles an install that could not reach its operator or
// whose call failed: a gone environment or a refused request fails it;
// anything else is retried until the install's bound, then fails it with
// the last error.
func (m *Manager) installTrouble(ctx context.Context, key string, inst *instance, rec record, deadline, now time.Time, err error) (time.Duration, error) {
	if ctx.Err() != nil {
		return done, nil
	}
	if errors.Is(err, operators.ErrEnvironmentGone) || errors.Is(err, operators.ErrRefused) || !now.Before(deadline) {
		return done, m.transition(ctx, key, inst, evInstallFailed, change{level: "error", generation: rec.Generation, message: err.Error()})
	}
	msg := "waiting: " + err.Error()
	inst.mu.Lock()
	changed := inst.progress != msg
	inst.progress = msg
	inst.mu.Unlock()
	if changed {
		m.note(key, inst, "warning", msg)
	}
	return notReadyRetry, nil
}

// reapply applies an Installed instance's spec again (at load and every
// Resync): what drifted comes back. Trouble is logged, not a phase change;
// the status endpoint shows the levels.
func (m *Manager) reapply(ctx context.Context, key string, inst *instance, rec record) (time.Duration, error) {
	op, err := m.operator(rec.Env)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
		_, err = op.Apply(cctx, applyRequest(rec.App, rec.Spec, rec.SpecHash))
		cancel()
	}
	if err != nil && ctx.Err() == nil {
		m.note(key, inst, "warning", "re-applying the installed spec: "+err.Error())
	}
	return done, nil
}

// uninstall removes what the instance owns. A gone environment holds
// nothing any more; other trouble is retried until UninstallTimeout, then
// the instance is Failed (DELETE again to retry).
func (m *Manager) uninstall(ctx context.Context, key string, inst *instance, rec record) (time.Duration, error) {
	op, err := m.operator(rec.Env)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
		err = op.Uninstall(cctx, rec.App)
		cancel()
	}
	switch {
	case ctx.Err() != nil:
		return done, nil
	case err == nil:
		return done, m.transition(ctx, key, inst, evUninstalled, change{generation: rec.Generation})
	case errors.Is(err, operators.ErrEnvironmentGone):
		return done, m.transition(ctx, key, inst, evUninstalled, change{generation: rec.Generation, message: "the environment is gone, and what ran there with it"})
	case !m.opts.Clock.Now().Before(rec.PhaseSince.Add(m.opts.UninstallTimeout)):
		return done, m.transition(ctx, key, inst, evUninstallFailed, change{level: "error", generation: rec.Generation, message: "uninstall: " + err.Error() + " (DELETE again to retry)"})
	}
	m.note(key, inst, "warning", "uninstall will be retried: "+err.Error())
	return notReadyRetry, nil
}

// Summarize says in one line how healthy an application is and, when it
// is not, which version on which node is not ready and why.
func Summarize(st *model.ApplicationStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "level %d", st.Healthy.Level)
	vs := append([]model.VersionStatus(nil), st.Versions...)
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Healthy.Level < vs[j].Healthy.Level })
	for _, v := range vs {
		if v.Healthy.Level == 100 {
			continue
		}
		fmt.Fprintf(&b, "; version %s %d/%d ready", v.Version, v.Ready, v.Desired)
		for _, n := range v.Nodes {
			if n.Healthy.Level == 100 {
				continue
			}
			fmt.Fprintf(&b, ", node %s %d/%d", n.Node, n.Ready, n.Desired)
			if n.Reason != "" {
				fmt.Fprintf(&b, " (%s)", n.Reason)
			}
		}
	}
	if len(st.Versions) == 0 {
		b.WriteString(": nothing runs")
	}
	return b.String()
}
