package clustermanager

import (
	"log/slog"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
)

// The server log's account of a cluster: every state change
// (logTransition, from the fsm hooks), and every operation's start
// (logStarted, by the engine when it queues a run) and end with its
// outcome, duration and where it failed (logEnded, by conclude). Lines are
// structured (cluster, operation, step, node, duration) so that an
// operator can follow one cluster or one operation with a filter; they
// never carry secrets (a reason is built from redacted errors).

func (m *Manager) logTransition(t fsm.Transition[change]) {
	m.log.Info("cluster state changed", "cluster", t.Cluster, "from", string(t.From), "to", string(t.To), "event", string(t.Event))
}

// logStarted logs that a run of k begins (resumed: after a restart).
func (m *Manager) logStarted(e *entry, k *opKind, resumed bool) {
	attrs := []any{"cluster", e.name, "operation", string(k.typ)}
	if op := e.record().LastOperation; op.running() && op.StartedBy != "" {
		attrs = append(attrs, "startedBy", op.StartedBy)
	}
	if resumed {
		attrs = append(attrs, "resumed", true)
	}
	m.log.Info("operation started", attrs...)
	m.opts.Observer.OperationStarted(string(k.typ))
}

// logEnded logs an operation's outcome; op is the ended last operation,
// or nil when the run had none to end (a reconnect at start-up).
func (m *Manager) logEnded(e *entry, k *opKind, state OperationState, op *Operation) {
	attrs := []any{"cluster", e.name, "operation", string(k.typ), "outcome", string(state)}
	level := slog.LevelInfo
	took := time.Duration(-1)
	if op != nil && op.EndedAt != nil {
		took = op.EndedAt.Sub(op.StartedAt)
		attrs = append(attrs, "duration", took.Round(time.Millisecond).String())
	}
	m.opts.Observer.OperationEnded(string(k.typ), string(state), took)
	if op != nil && op.Error != nil {
		level = slog.LevelWarn
		attrs = append(attrs, "step", op.Error.Step, "node", op.Error.Node, "error", op.Error.Message)
	}
	m.log.Log(m.root, level, "operation "+string(state), attrs...)
}
