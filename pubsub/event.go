// Package pubsub is singlecloud's in-process event bus: typed cluster
// lifecycle events fanned out to every subscriber. Publishing never blocks:
// a subscriber that falls behind by more than its buffer loses the events
// that do not fit, so one slow websocket cannot stall the state machine.
package pubsub

import "time"

// Kind says what happened to a cluster.
type Kind string

// The lifecycle event kinds (SPEC §2, §7).
const (
	// ClusterCreated: a cluster became ready (created, imported, updated or
	// reloaded and connected).
	ClusterCreated Kind = "ClusterCreated"
	// ClusterStatusChanged: a cluster moved between states.
	ClusterStatusChanged Kind = "ClusterStatusChanged"
	// ClusterDeleted: a cluster left the ready list or was removed.
	ClusterDeleted Kind = "ClusterDeleted"
	// ClusterOperationStalled: the running step of a cluster's operation
	// passed its deadline; Reason says what it waits for, on which node,
	// and its last error. The status does not change.
	ClusterOperationStalled Kind = "ClusterOperationStalled"
	// ClusterOperationProgress: the running operation of a cluster saved
	// a step's start or end (its lastOperation's step, index, percent and
	// steps moved); Reason says which step, in one line. The status does
	// not change. A client showing progress re-reads the cluster.
	ClusterOperationProgress Kind = "ClusterOperationProgress"
	// ClusterCertificateExpiring: the cluster's first certificate to
	// expire is within 120, 30 or 7 days, or expired; Reason says which
	// certificate, when, and what to do.
	ClusterCertificateExpiring Kind = "ClusterCertificateExpiring"
	// ClusterSnapshotTaken: an etcd snapshot of the cluster was stored;
	// Reason names it, its trigger, size, revision and member.
	ClusterSnapshotTaken Kind = "ClusterSnapshotTaken"
	// ClusterSnapshotVerified: a snapshot passed its restore drill.
	ClusterSnapshotVerified Kind = "ClusterSnapshotVerified"
	// ClusterSnapshotFailed: a snapshot could not be taken, or failed
	// its restore drill; Reason says which and why.
	ClusterSnapshotFailed Kind = "ClusterSnapshotFailed"
	// ApplicationPhaseChanged: an application instance moved between
	// phases (Waiting, Installing, Installed, Failed, Uninstalling,
	// Uninstalled); Reason says why. Cluster is set when the
	// environment is a cluster.
	ApplicationPhaseChanged Kind = "ApplicationPhaseChanged"
)

// Event is one lifecycle event. It is a value: subscribers may keep it.
type Event struct {
	Kind    Kind   `json:"type"`
	Cluster string `json:"cluster"`
	Status  string `json:"status,omitempty"`
	From    string `json:"from,omitempty"`
	Event   string `json:"event,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Environment and Application name the application instance of an
	// Application… event.
	Environment string    `json:"environment,omitempty"`
	Application string    `json:"application,omitempty"`
	Time        time.Time `json:"time"`
}
