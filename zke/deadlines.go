package zke

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// The default deadline of each step: how long it may run before the
// cluster's operation reports it stalled (workflow.Stall). A stalled step
// is not stopped; its own bounded waits (installer.go) end it. Each is
// generous, above what a healthy step takes, so that a stall means
// something is wrong; a cluster overrides them with stepDeadlines.
const (
	// deadlineConnect: each node's dial is tried DefaultDialAttempts (3)
	// times, each bounded by the dial and handshake timeouts (10 s
	// each), plus a Docker ping.
	deadlineConnect = 2 * time.Minute
	// deadlinePreflight: one script and a few Docker calls per node.
	deadlinePreflight = 2 * time.Minute
	// deadlineCertificates: signing is instant; the time goes in
	// uploading a few dozen files per node.
	deadlineCertificates = 2 * time.Minute
	// deadlineImages: pulls of the component images and copies into
	// containerd (podImageImportTimeout, 5 min each) on slow links.
	deadlineImages = 10 * time.Minute
	// deadlineEtcd: two etcd waits (etcdHealthTimeout, 2 min each: the
	// learner's promotion, then its health) for a member that joins.
	deadlineEtcd = 4 * time.Minute
	// deadlineControlPlane: kube-apiserver's readiness
	// (apiServerReadyTimeout, 4 min) then the controller manager and
	// scheduler (componentHealthTimeout, 2 min), with slack.
	deadlineControlPlane = 7 * time.Minute
	// deadlineWorkers: kube-proxy's health (componentHealthTimeout,
	// 2 min) then the kubelets' registration (nodeReadyTimeout, 4 min).
	deadlineWorkers = 6 * time.Minute
	// deadlineNetwork: pod CIDRs and Ready, each bounded by
	// nodeReadyTimeout (4 min), usually quick once the first is there.
	deadlineNetwork = 6 * time.Minute
	// deadlineAddons: CoreDNS rolling out (corednsReadyTimeout, 5 min:
	// its image may be pulled first).
	deadlineAddons = 6 * time.Minute
	// deadlineKubeconfig: the admin's binding, then each API server's
	// authorization of it (adminAccessTimeout, 1 min), with slack.
	deadlineKubeconfig = 2 * time.Minute
	// deadlineDrain: one drain (drainTimeout, 2 min) for a removed node
	// or two.
	deadlineDrain = 4 * time.Minute
	// deadlineClean: containerd's kills and deletes (ctr*TimeoutSecs,
	// 50 s per container) and an rm -rf of the kubelet's directories.
	deadlineClean = 3 * time.Minute
	// deadlineRestart: every etcd member in turn (etcdHealthTimeout,
	// 2 min each), then the control plane and the workers as in their
	// own steps.
	deadlineRestart = 15 * time.Minute
	// deadlineSnapshot: the stream of the whole keyspace over SSH; a
	// large etcd (its 8 GiB quota) takes minutes.
	deadlineSnapshot = 10 * time.Minute
	// deadlineArtifacts: downloading a release file (~50 MB) once, on
	// a slow link, and uploading its plugins to every worker.
	deadlineArtifacts = 15 * time.Minute
	// deadlineStop: removing a few containers per node.
	deadlineStop = 2 * time.Minute
	// deadlineRestore: the snapshot's upload to every member and etcd's
	// restore job (restoreJobTimeout, 5 min) on each, in parallel.
	deadlineRestore = 10 * time.Minute
)

// defaultDeadlines are the deadlines of every step, by name.
func defaultDeadlines() map[string]time.Duration {
	return map[string]time.Duration{
		stepConnect:      deadlineConnect,
		stepPreflight:    deadlinePreflight,
		stepCertificates: deadlineCertificates,
		stepArtifacts:    deadlineArtifacts,
		stepImages:       deadlineImages,
		stepEtcd:         deadlineEtcd,
		stepControlPlane: deadlineControlPlane,
		stepWorkers:      deadlineWorkers,
		stepNetwork:      deadlineNetwork,
		stepAddons:       deadlineAddons,
		stepKubeconfig:   deadlineKubeconfig,
		stepDrain:        deadlineDrain,
		stepClean:        deadlineClean,
		stepRestart:      deadlineRestart,
		stepSnapshot:     deadlineSnapshot,
		stepStop:         deadlineStop,
		stepRestore:      deadlineRestore,
		stepTrustCA:      deadlineRestart,
		stepReissue:      deadlineRestart,
		stepDropCA:       deadlineRestart + deadlineAddons,
	}
}

// stepDeadlines returns the deadline of every step: the defaults with
// cfg's stepDeadlines. Validation has checked them; a config that slipped
// past it (an unknown step, a bad or out-of-range duration) is refused
// here as well, naming the field.
func stepDeadlines(cfg model.ClusterConfig) (map[string]time.Duration, error) {
	out := defaultDeadlines()
	for _, step := range slices.Sorted(maps.Keys(cfg.StepDeadlines)) {
		v := cfg.StepDeadlines[step]
		if _, ok := out[step]; !ok {
			return nil, fmt.Errorf("stepDeadlines.%s: unknown step; use one of %v", step, model.StepNames())
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < model.MinStepDeadline || d > model.MaxStepDeadline {
			return nil, fmt.Errorf("stepDeadlines.%s: %q is not a duration between %s and %s", step, v, model.MinStepDeadline, model.MaxStepDeadline)
		}
		out[step] = d
	}
	return out, nil
}
