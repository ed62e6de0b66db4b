package clustermanager

import (
	"fmt"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/validation"
)

// Action is an admin request on one cluster, named as the API names it
// (?action=…, PUT for update, DELETE for delete, POST …/snapshots).
type Action string

// The actions, in the order a view lists them.
const (
	ActionUpdate             Action = "update"
	ActionCancel             Action = "cancel"
	ActionRetry              Action = "retry"
	ActionReconnect          Action = "reconnect"
	ActionRevert             Action = "revert"
	ActionRotateCertificates Action = "rotateCertificates"
	ActionSnapshot           Action = "snapshot"
	ActionRestore            Action = "restore"
	ActionForgetHostKey      Action = "forgetHostKey"
	ActionDelete             Action = "delete"
)

// allActions lists the actions in view order; an ActionSet's bit i is
// allActions()[i]. An array, so that asking it allocates nothing.
func allActions() [10]Action {
	return [...]Action{
		ActionUpdate, ActionCancel, ActionRetry, ActionReconnect, ActionRevert,
		ActionRotateCertificates, ActionSnapshot, ActionRestore, ActionForgetHostKey, ActionDelete,
	}
}

// ActionSet is the set of actions a cluster accepts now, as its state
// machine and its record say. A view carries it so that clients (the
// console, the CLI) offer exactly what the server would accept, and never
// work it out from states by hand. A request still re-checks: the cluster
// may have moved since the view was taken.
type ActionSet uint16

// Has reports whether a is in the set.
func (s ActionSet) Has(a Action) bool {
	for i, x := range allActions() {
		if x == a {
			return s&(1<<i) != 0
		}
	}
	return false
}

// With returns s with as added.
func (s ActionSet) With(as ...Action) ActionSet {
	for i, x := range allActions() {
		for _, a := range as {
			if x == a {
				s |= 1 << i
			}
		}
	}
	return s
}

// List returns the actions of the set in view order.
func (s ActionSet) List() []Action {
	out := []Action{}
	for i, a := range allActions() {
		if s&(1<<i) != 0 {
			out = append(out, a)
		}
	}
	return out
}

// standing is what a record's sealed installer state says about the
// operations it may start. It is read while the secrets are open (a
// follower drops them once a row is decoded), so that a view needs only
// the record's public fields and this.
type standing struct {
	neverCreated    bool // a create that never finished (unfinishedCreate)
	pendingNodes    bool // a node change that did not finish
	pendingRotation bool // a certificate rotation that did not finish
	pendingUpgrade  bool // an upgrade (or revert) that did not finish
	etcdReachable   bool // singlecloud installed the cluster's etcd and holds its PKI
}

// standingOf reads r's standing; r must still carry its secrets.
func standingOf(r *record) standing {
	return standing{
		neverCreated:    unfinishedCreate(r),
		pendingNodes:    pendingNodes(r),
		pendingRotation: unfinishedRotation(r),
		pendingUpgrade:  unfinishedUpgrade(r),
		etcdReachable:   r.Kind == KindCreated && r.secrets.ZKE != nil && r.secrets.ZKE.PKI != nil,
	}
}

// refusal is why a cluster refuses an action now; allowed (zero) accepts
// it. A code, not an error: a list of 10,000 views asks every action of
// every cluster, and only a request that is refused needs the message
// (refusalError).
type refusal uint8

const (
	allowed                 refusal = iota
	refusedByState                  // the state machine refuses the action's event (or edit) now
	refusedImported                 // singlecloud did not install the cluster
	refusedCreated                  // the action is for imported clusters only
	refusedNeverCreated             // the create never finished: retry it first
	refusedRestorePending           // a restore did not finish: retry it first
	refusedNodesPending             // a node change did not finish: retry it first
	refusedRotationPending          // a certificate rotation did not finish: retry it first
	refusedUpgradePending           // an upgrade did not finish: retry or revert it first
	refusedNoUpgradePending         // revert: there is no unfinished upgrade
)

// check says whether a cluster with record r (its public fields), standing
// st and state s accepts a, and which event the state was asked about.
// Every action's "may I" lives here: the Manager's methods refuse with it
// and views list what it allows.
func check(a Action, r *record, st standing, s fsm.State) (refusal, fsm.Event) {
	created := r.Kind == KindCreated && r.Config != nil
	restorePending := unfinishedRestore(r)
	switch a {
	case ActionUpdate:
		switch {
		case !created:
			return refusedImported, ""
		case !fsm.Allows(s, fsm.EventUpdate):
			return refusedByState, fsm.EventUpdate
		case st.pendingRotation:
			return refusedRotationPending, ""
		case restorePending:
			return refusedRestorePending, ""
		case st.pendingUpgrade:
			return refusedUpgradePending, ""
		}
	case ActionCancel:
		if !fsm.Allows(s, fsm.EventCancel) {
			return refusedByState, fsm.EventCancel
		}
	case ActionRetry:
		ev := fsm.EventResume
		if r.Kind == KindImported {
			ev = fsm.EventReconnect
		}
		if !fsm.Allows(s, ev) {
			return refusedByState, ev
		}
	case ActionReconnect:
		switch {
		case r.Kind != KindImported:
			return refusedCreated, ""
		case !fsm.Allows(s, fsm.EventReconnect):
			return refusedByState, fsm.EventReconnect
		}
	case ActionRevert:
		switch {
		case !fsm.Allows(s, fsm.EventUpdate):
			return refusedByState, fsm.EventUpdate
		case !created || !st.pendingUpgrade:
			return refusedNoUpgradePending, ""
		}
	case ActionRotateCertificates:
		switch {
		case !fsm.Allows(s, fsm.EventRotateCertificates):
			return refusedByState, fsm.EventRotateCertificates
		case !created:
			return refusedImported, ""
		case st.neverCreated:
			return refusedNeverCreated, ""
		case restorePending:
			return refusedRestorePending, ""
		case st.pendingNodes:
			return refusedNodesPending, ""
		}
	case ActionRestore:
		switch {
		case !fsm.Allows(s, fsm.EventRestore):
			return refusedByState, fsm.EventRestore
		case !created:
			return refusedImported, ""
		case st.neverCreated:
			return refusedNeverCreated, ""
		case st.pendingNodes:
			return refusedNodesPending, ""
		case st.pendingRotation:
			return refusedRotationPending, ""
		}
	case ActionSnapshot:
		switch {
		case !st.etcdReachable:
			return refusedImported, ""
		case s.Busy():
			return refusedByState, ""
		}
	case ActionForgetHostKey:
		switch {
		case r.Kind != KindCreated:
			return refusedImported, ""
		case !fsm.AllowsEdit(s, fsm.EditForgetHostKey):
			return refusedByState, ""
		}
	case ActionDelete:
		if !fsm.Allows(s, fsm.EventDelete) {
			return refusedByState, fsm.EventDelete
		}
	}
	return allowed, ""
}

// actionsOf is the set of actions check allows.
func actionsOf(r *record, st standing, s fsm.State) ActionSet {
	var set ActionSet
	for i, a := range allActions() {
		if why, _ := check(a, r, st, s); why == allowed {
			set |= 1 << i
		}
	}
	return set
}

// refuse returns the error with which cluster e refuses a now, or nil.
func (m *Manager) refuse(e *entry, a Action) error {
	rec := e.record()
	s := e.machine.Current()
	why, ev := check(a, rec, standingOf(rec), s)
	return refusalError(e.name, a, why, ev, s, rec)
}

// refusalError is the error of a refusal: a *fsm.TransitionError (or
// EditError, or ErrBusy) when the state refuses, else a validation error
// on the request's field that says what to do first.
func refusalError(name string, a Action, why refusal, ev fsm.Event, s fsm.State, r *record) error {
	field, doing := "action", ""
	switch a {
	case ActionUpdate:
		field, doing = "name", "changing the cluster"
	case ActionRotateCertificates:
		doing = "rotating its certificates"
	case ActionRestore:
		doing = "restoring"
	case ActionForgetHostKey:
		field = "node"
	}
	var reason string
	switch why {
	case allowed:
		return nil
	case refusedByState:
		switch a {
		case ActionSnapshot:
			return busyError(name, s)
		case ActionForgetHostKey:
			return &fsm.EditError{Cluster: name, Edit: fsm.EditForgetHostKey, State: s}
		}
		return &fsm.TransitionError{Cluster: name, Event: ev, State: s}
	case refusedImported:
		switch a {
		case ActionSnapshot:
			return fmt.Errorf("cluster %s: %w", name, ErrNotSnapshottable)
		case ActionUpdate:
			reason = fmt.Sprintf("cluster %s is imported: singlecloud does not manage its nodes", name)
		case ActionRotateCertificates:
			reason = fmt.Sprintf("cluster %s is imported: singlecloud did not issue its certificates", name)
		case ActionRestore:
			reason = fmt.Sprintf("cluster %s is imported: singlecloud cannot reach its etcd", name)
		default:
			reason = fmt.Sprintf("cluster %s was imported: singlecloud never connects to its hosts over SSH", name)
		}
	case refusedCreated:
		reason = fmt.Sprintf("cluster %s was created by singlecloud: reconnect applies to imported clusters; use ?action=retry", name)
	case refusedNeverCreated:
		reason = fmt.Sprintf("cluster %s was never created: retry the create first", name)
	case refusedRestorePending:
		reason = fmt.Sprintf("a restore of cluster %s did not finish and its etcd members may hold different data: retry it (?action=retry) before %s", name, doing)
	case refusedNodesPending:
		reason = fmt.Sprintf("cluster %s has a node change that did not finish: retry the update (?action=retry) before %s", name, doing)
	case refusedRotationPending:
		reason = fmt.Sprintf("a certificate rotation of cluster %s did not finish and some components may still run on the old certificates: retry it (?action=retry) before %s", name, doing)
	case refusedUpgradePending:
		field = "kubernetesVersion"
		reason = fmt.Sprintf("an upgrade of cluster %s to %s did not finish: retry it (?action=retry) or revert it (?action=revert) before %s", name, r.Config.KubernetesVersion, doing)
	case refusedNoUpgradePending:
		reason = fmt.Sprintf("cluster %s has no unfinished upgrade to revert", name)
	}
	return validation.Errors{{Field: field, Reason: reason}}
}
