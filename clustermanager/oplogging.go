package clustermanager

import (
	"log/slog"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
)

// logTransition writes the server log's account of a transition: every
// state change, and when the transition starts or ends the cluster's last
// operation, that operation with its outcome, duration and where it
// failed. rec is the record as saved by the transition (for the final
// delete, the last record the cluster had). Lines are structured (cluster,
// operation, step, node, duration) so that an operator can follow one
// cluster or one operation with a filter; they never carry secrets (a
// reason is built from redacted errors).
func (m *Manager) logTransition(t fsm.Transition[change], rec *record) {
	m.log.Info("cluster state changed", "cluster", t.Cluster, "from", string(t.From), "to", string(t.To), "event", string(t.Event))
	if rec == nil || rec.LastOperation == nil {
		return
	}
	op := rec.LastOperation
	attrs := []any{"cluster", t.Cluster, "operation", string(op.Type)}
	switch {
	case t.To == fsm.StateDeleted:
		d := m.opts.Clock().Sub(op.StartedAt)
		m.log.Info("operation succeeded", append(attrs, "duration", d.Round(time.Millisecond).String())...)
	case op.EndedAt != nil && !t.From.Settled() && t.To.Settled():
		attrs = append(attrs, "outcome", string(op.State), "duration", op.EndedAt.Sub(op.StartedAt).Round(time.Millisecond).String())
		level := slog.LevelInfo
		if op.Error != nil {
			level = slog.LevelWarn
			attrs = append(attrs, "step", op.Error.Step, "node", op.Error.Node, "error", op.Error.Message)
		}
		m.log.Log(m.root, level, "operation "+string(op.State), attrs...)
	case op.State == OpRunning && t.From != t.To && t.To != fsm.StateCanceling && (t.From.Settled() || t.From == fsm.StateNew || t.To == fsm.StateDeleting):
		m.log.Info("operation started", attrs...)
	}
}
