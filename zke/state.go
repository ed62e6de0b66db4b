package zke

import (
	"time"

	"maps"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
)

// State is what zke knows about a cluster it made, carried from run to run
// by the caller (it holds private keys: store it sealed). A run never
// trusts it blindly: every step re-checks the hosts, and a step skipped on
// resume (Fingerprints) is verified on them first.
type State struct {
	// PKI is the cluster's certificates; its CAs never change once made.
	PKI *pki.Bundle `json:"pki,omitempty"`
	// HostKeys pins each node's SSH host key (by node address) on first
	// contact; a later mismatch stops the run.
	HostKeys map[string]string `json:"hostKeys,omitempty"`
	// Applied is the configuration of the last run that succeeded; nil
	// until the create succeeds.
	Applied *model.ClusterConfig `json:"applied,omitempty"`
	// EtcdMembers are the nodes whose etcd has joined the cluster.
	EtcdMembers []string `json:"etcdMembers,omitempty"`
	// EtcdInitialCluster is each member's --initial-cluster, fixed when
	// it joined, so that its container spec never changes afterwards.
	EtcdInitialCluster map[string]string `json:"etcdInitialCluster,omitempty"`
	// Kubeconfig is the admin kubeconfig, written back at the end of a
	// create.
	Kubeconfig []byte `json:"kubeconfig,omitempty"`
	// Checkpoints are the steps the current operation has finished.
	Checkpoints []string `json:"checkpoints,omitempty"`
	// Fingerprints hold, by step, the fingerprint of the inputs each
	// finished step of the current operation acted on: a resumed
	// Create or Update skips a step whose inputs still hash the same
	// and whose effect verifies as still in place.
	Fingerprints map[string]string `json:"fingerprints,omitempty"`
	// AdminUser is the user of the admin certificate behind the
	// kubeconfig singlecloud hands out; "" is pki.AdminCN. A leaf
	// rotation gives it a new one, which revokes the kubeconfigs handed
	// out before (their user loses its binding).
	AdminUser string `json:"adminUser,omitempty"`
	// RotateBefore is the cutoff of a certificate rotation in progress:
	// every leaf issued before it is reissued. It is fixed when the
	// rotation starts, so that a resumed rotation does not reissue what
	// the interrupted one already did.
	RotateBefore *time.Time `json:"rotateBefore,omitempty"`
	// CAPhase is the phase of a CA rotation asked for or in progress
	// (rotate_ca.go); "" when none is. Like Restore, only the rotation
	// finishing ends it: ResetProgress keeps it.
	CAPhase CAPhase `json:"caPhase,omitempty"`
	// Restore is the etcd restore in progress: fixed when it starts, so
	// that a resumed restore uses the same snapshot and cluster token
	// and does not redo the members it finished.
	Restore *RestoreProgress `json:"restore,omitempty"`
	// Owned records, by node address, the absolute paths on the node
	// that zke made or found free before writing there (ownership.go):
	// the only ones it writes into and deletes. A node has a record (may
	// be empty) once a preflight passed on it.
	Owned map[string][]string `json:"owned,omitempty"`
}

// RestoreProgress is an etcd restore in progress.
type RestoreProgress struct {
	// Snapshot is the id of the snapshot being restored.
	Snapshot string `json:"snapshot"`
	// Token is the restored etcd cluster's new --initial-cluster-token:
	// a restored cluster is a new etcd cluster, which must not be
	// mistaken for the old one by a member that was left behind.
	Token string `json:"token"`
	// Aside names the directory on each member that keeps the data the
	// restore replaced (before-restore-<Aside>). It is fixed by the first
	// of a run of restores that did not finish: a later restore (of
	// another snapshot) never overwrites the original data with data an
	// earlier attempt restored.
	Aside string `json:"aside"`
}

// ResetProgress forgets the progress of an operation (its checkpoints
// and fingerprints). The caller calls it before a fresh operation, so
// that it cannot skip steps on the strength of another operation's
// fingerprints, and after an operation succeeded. An unfinished restore
// is kept: it says where the members' original data was set aside, and
// only a restore that succeeds ends it.
func (s *State) ResetProgress() {
	s.RotateBefore = nil
	s.Checkpoints = nil
	s.Fingerprints = nil
}

// Clone returns a copy that shares nothing mutable with s.
func (s State) Clone() State {
	c := s
	if s.RotateBefore != nil {
		t := *s.RotateBefore
		c.RotateBefore = &t
	}
	if s.Restore != nil {
		rp := *s.Restore
		c.Restore = &rp
	}
	if s.HostKeys != nil {
		c.HostKeys = make(map[string]string, len(s.HostKeys))
		for k, v := range s.HostKeys {
			c.HostKeys[k] = v
		}
	}
	c.EtcdMembers = append([]string(nil), s.EtcdMembers...)
	if s.EtcdInitialCluster != nil {
		c.EtcdInitialCluster = make(map[string]string, len(s.EtcdInitialCluster))
		for k, v := range s.EtcdInitialCluster {
			c.EtcdInitialCluster[k] = v
		}
	}
	if s.Owned != nil {
		c.Owned = make(map[string][]string, len(s.Owned))
		for k, v := range s.Owned {
			c.Owned[k] = append([]string{}, v...)
		}
	}
	c.Checkpoints = append([]string(nil), s.Checkpoints...)
	c.Fingerprints = maps.Clone(s.Fingerprints)
	c.Kubeconfig = append([]byte(nil), s.Kubeconfig...)
	if s.Applied != nil {
		cfg := *s.Applied
		cfg.Nodes = append([]model.Node(nil), s.Applied.Nodes...)
		cfg.Images = maps.Clone(s.Applied.Images)
		cfg.StepDeadlines = maps.Clone(s.Applied.StepDeadlines)
		c.Applied = &cfg
	}
	return c
}
