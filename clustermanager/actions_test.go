package clustermanager

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/pki"
)

// actionRecord is a created cluster's record: applied at v1.36.3 on one
// node unless edit changes it.
func actionRecord(edit func(r *record)) *record {
	node := model.Node{Name: "n1", Address: "10.0.0.1", Roles: []model.Role{"controlplane", "etcd", "worker"}}
	cfg := model.ClusterConfig{Name: "lab", KubernetesVersion: "v1.36.3", Nodes: []model.Node{node}}
	applied := cfg
	applied.Nodes = slices.Clone(cfg.Nodes)
	r := &record{Name: "lab", Kind: KindCreated, Config: &cfg}
	r.secrets.ZKE = &zke.State{PKI: &pki.Bundle{}, Applied: &applied}
	if edit != nil {
		edit(r)
	}
	return r
}

func TestActionsFollowTheStateAndTheRecord(t *testing.T) {
	all := func(as ...Action) []Action { return as }
	cutoff := time.Now()
	tests := []struct {
		name  string
		rec   *record
		state fsm.State
		want  []Action
	}{
		{"running", actionRecord(nil), fsm.StateRunning,
			all(ActionUpdate, ActionRotateCertificates, ActionSnapshot, ActionRestore, ActionForgetHostKey, ActionDelete)},
		{"unreachable", actionRecord(nil), fsm.StateUnreachable,
			all(ActionUpdate, ActionRotateCertificates, ActionSnapshot, ActionRestore, ActionForgetHostKey, ActionDelete)},
		{"installing", actionRecord(nil), fsm.StateCreating, all(ActionCancel, ActionDelete)},
		{"updating", actionRecord(nil), fsm.StateUpdating, all(ActionCancel, ActionDelete)},
		{"canceling", actionRecord(nil), fsm.StateCanceling, all()},
		{"deleting", actionRecord(nil), fsm.StateDeleting, all()},
		{"create failed", actionRecord(func(r *record) { r.secrets.ZKE.Applied = nil; r.secrets.ZKE.PKI = nil }), fsm.StateUnavailable,
			all(ActionUpdate, ActionRetry, ActionForgetHostKey, ActionDelete)},
		{"upgrade failed", actionRecord(func(r *record) { r.Config.KubernetesVersion = "v1.37.0" }), fsm.StateUnavailable,
			all(ActionRetry, ActionRevert, ActionRotateCertificates, ActionSnapshot, ActionRestore, ActionForgetHostKey, ActionDelete)},
		{"node change failed", actionRecord(func(r *record) {
			r.Config.Nodes = append(r.Config.Nodes, model.Node{Name: "n2", Address: "10.0.0.2", Roles: []model.Role{"worker"}})
		}), fsm.StateUnavailable,
			all(ActionUpdate, ActionRetry, ActionSnapshot, ActionForgetHostKey, ActionDelete)},
		{"rotation failed", actionRecord(func(r *record) { r.secrets.ZKE.RotateBefore = &cutoff }), fsm.StateUnavailable,
			all(ActionRetry, ActionRotateCertificates, ActionSnapshot, ActionForgetHostKey, ActionDelete)},
		{"restore failed", actionRecord(func(r *record) { r.RestoreSnapshot = "s1" }), fsm.StateUnavailable,
			all(ActionRetry, ActionSnapshot, ActionRestore, ActionForgetHostKey, ActionDelete)},
		{"imported, running", &record{Name: "lab", Kind: KindImported}, fsm.StateRunning, all(ActionDelete)},
		{"imported, unavailable", &record{Name: "lab", Kind: KindImported}, fsm.StateUnavailable,
			all(ActionRetry, ActionReconnect, ActionDelete)},
		{"imported, connecting", &record{Name: "lab", Kind: KindImported}, fsm.StateConnecting, all(ActionCancel, ActionDelete)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := standingOf(tt.rec)
			set := actionsOf(tt.rec, st, tt.state)
			if got := set.List(); !slices.Equal(got, tt.want) {
				t.Errorf("actions = %v, want %v", got, tt.want)
			}
			// Each refused action has the error its request gets.
			for _, a := range allActions() {
				why, ev := check(a, tt.rec, st, tt.state)
				err := refusalError("lab", a, why, ev, tt.state, tt.rec)
				if set.Has(a) != (err == nil) {
					t.Errorf("%s: in the set %v, refused with %v", a, set.Has(a), err)
				}
				var verr validation.Errors
				switch {
				case err == nil, errors.Is(err, fsm.ErrInvalidTransition), errors.Is(err, ErrBusy), errors.Is(err, ErrNotSnapshottable):
				case errors.As(err, &verr) && len(verr) == 1 && strings.Contains(verr[0].Reason, "lab"):
				default:
					t.Errorf("%s: refused with %v (%T), want a transition error or a validation error naming the cluster", a, err, err)
				}
			}
		})
	}
}

func TestRefusalsSayWhatToDoFirst(t *testing.T) {
	rec := actionRecord(func(r *record) { r.Config.KubernetesVersion = "v1.37.0" })
	why, ev := check(ActionUpdate, rec, standingOf(rec), fsm.StateUnavailable)
	err := refusalError("lab", ActionUpdate, why, ev, fsm.StateUnavailable, rec)
	var verr validation.Errors
	if !errors.As(err, &verr) || verr[0].Field != "kubernetesVersion" || !strings.Contains(verr[0].Reason, "revert it (?action=revert) before changing the cluster") {
		t.Errorf("update during an unfinished upgrade: %v", err)
	}
	why, ev = check(ActionRetry, rec, standingOf(rec), fsm.StateRunning)
	var terr *fsm.TransitionError
	if err := refusalError("lab", ActionRetry, why, ev, fsm.StateRunning, rec); !errors.As(err, &terr) || terr.Event != fsm.EventResume {
		t.Errorf("retry of a running cluster: %v, want the resume event refused", err)
	}
	var eerr *fsm.EditError
	why, ev = check(ActionForgetHostKey, rec, standingOf(rec), fsm.StateCreating)
	if err := refusalError("lab", ActionForgetHostKey, why, ev, fsm.StateCreating, rec); !errors.As(err, &eerr) {
		t.Errorf("forgetting a host key during an install: %v, want an edit error", err)
	}
}
