package clustermanager

import (
	"errors"
	"testing"

	"github.com/zdnscloud/singlecloud/fsm"
)

// TestRestoredState pins what each stored row restarts as, and which
// operation resumes: Updating resumes the installer operation that was
// running (an upgrade node by node, a rotation with its cutoff, a restore
// with its snapshot), not a plain update.
func TestRestoredState(t *testing.T) {
	op := func(typ OperationType) *Operation { return &Operation{Type: typ, State: OpRunning} }
	tests := []struct {
		name      string
		rec       record
		decodeErr error
		state     fsm.State
		resume    OperationType
	}{
		{"undecodable", record{Status: fsm.StateRunning}, errors.New("bad"), fsm.StateUnavailable, ""},
		{"deleting", record{Status: fsm.StateDeleting}, nil, fsm.StateDeleting, OpDelete},
		{"creating", record{Kind: KindCreated, Status: fsm.StateCreating}, nil, fsm.StateCreating, OpCreate},
		{"updating", record{Kind: KindCreated, Status: fsm.StateUpdating, LastOperation: op(OpUpdate)}, nil, fsm.StateUpdating, OpUpdate},
		{"upgrading", record{Kind: KindCreated, Status: fsm.StateUpdating, LastOperation: op(OpUpgrade)}, nil, fsm.StateUpdating, OpUpgrade},
		{"rotating", record{Kind: KindCreated, Status: fsm.StateUpdating, LastOperation: op(OpRotateCertificates)}, nil, fsm.StateUpdating, OpRotateCertificates},
		{"restoring", record{Kind: KindCreated, Status: fsm.StateUpdating, LastOperation: op(OpRestore)}, nil, fsm.StateUpdating, OpRestore},
		{"canceling", record{Kind: KindCreated, Status: fsm.StateCanceling}, nil, fsm.StateUnavailable, ""},
		{"running created", record{Kind: KindCreated, Status: fsm.StateRunning}, nil, fsm.StateConnecting, OpConnect},
		{"imported", record{Kind: KindImported, Status: fsm.StateUnreachable}, nil, fsm.StateConnecting, OpConnect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, resume := restoredState(&tt.rec, tt.decodeErr)
			if state != tt.state || resume != tt.resume {
				t.Errorf("restoredState = %s, %q; want %s, %q", state, resume, tt.state, tt.resume)
			}
		})
	}
}
