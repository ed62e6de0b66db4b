package model

import "time"

// The steps of zke's operations, as progress frames, checkpoints and
// ClusterConfig.StepDeadlines name them. They are spelled here, beside the
// config that refers to them, so that validation can check stepDeadlines
// without importing the installer; zke uses these constants for its step
// names.
const (
	StepConnect      = "connect"
	StepPreflight    = "preflight"
	StepCertificates = "certificates"
	// StepArtifacts installs the release files no image carries (the
	// CNI plugins), fetched and verified by checksum.
	StepArtifacts    = "artifacts"
	StepImages       = "images"
	StepEtcd         = "etcd"
	StepControlPlane = "controlplane"
	StepWorkers      = "workers"
	StepNetwork      = "network"
	StepAddons       = "addons"
	StepKubeconfig   = "kubeconfig"
	StepDrain        = "drain"
	StepClean        = "clean"
	// StepRestart restarts every component on the new certificates of
	// a rotation, etcd one member at a time.
	StepRestart = "restart"
	// StepSnapshot streams an etcd snapshot from a healthy member to
	// the singlecloud server.
	StepSnapshot = "snapshot"
	// StepStop stops the API servers and etcd before a restore;
	// StepRestore puts the snapshot's data in every member's place.
	StepStop    = "stop"
	StepRestore = "restore"
	// The three phases of a CA rotation, each rolled out to every node:
	// StepTrustCA trusts the new CAs beside the old ones, StepReissue
	// reissues every leaf from the new CAs, StepDropCA stops trusting
	// the old ones.
	StepTrustCA = "trust-ca"
	StepReissue = "reissue"
	StepDropCA  = "drop-ca"
)

// StepNames returns every step name, in the order an update runs them
// (create runs them without drain and clean; restart belongs to a
// certificate rotation; snapshot to a snapshot; stop and restore to a
// restore). It returns a new slice on
// every call.
func StepNames() []string {
	return []string{StepConnect, StepPreflight, StepArtifacts, StepCertificates, StepImages, StepEtcd, StepControlPlane,
		StepWorkers, StepNetwork, StepAddons, StepDrain, StepClean, StepRestart, StepKubeconfig, StepSnapshot, StepStop, StepRestore,
		StepTrustCA, StepReissue, StepDropCA}
}

// Bounds of a StepDeadlines entry: below the minimum a healthy step would
// be reported stalled, above the maximum a stuck one would never be.
const (
	MinStepDeadline = 30 * time.Second
	MaxStepDeadline = 24 * time.Hour
)
