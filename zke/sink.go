package zke

import (
	"context"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Sink receives a run's log, progress and checkpoints. Checkpoint is
// called after every finished step with the state as it is then; the
// caller stores it so that a cancelled or crashed run resumes from there.
// Methods must not block for long.
type Sink interface {
	Progress(p workflow.Progress)
	Log(l workflow.Line)
	Checkpoint(ctx context.Context, step string, st State) error
	// Stalled reports that the running step passed its deadline (see
	// workflow.Stall).
	Stalled(s workflow.Stall)
}
