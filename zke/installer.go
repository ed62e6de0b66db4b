package zke

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/artifacts"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Bounds of the waits of a run. Each is a named constant so that no wait
// is open-ended.
const (
	// nodeConcurrency bounds how many nodes a step works on at once.
	nodeConcurrency = 8
	// etcdHealthTimeout bounds the wait for one etcd member to report
	// healthy after it started: a join replicates the whole keyspace,
	// which takes seconds on a new cluster.
	etcdHealthTimeout = 2 * time.Minute
	// apiServerReadyTimeout bounds the wait for kube-apiserver's /readyz.
	// Four minutes, kubeadm's own bound for a control-plane component's
	// health (its controlPlaneComponentHealthCheck timeout): a v1.37 API
	// server on a slow machine (an emulated one took over three) still
	// comes up.
	apiServerReadyTimeout = 4 * time.Minute
	// componentHealthTimeout bounds the wait for the controller manager,
	// scheduler and kubelets to answer their health endpoints.
	componentHealthTimeout = 2 * time.Minute
	// nodeReadyTimeout bounds the wait for every kubelet to register and
	// report Ready.
	nodeReadyTimeout = 4 * time.Minute
	// pollInterval is the pause between two checks of a health gate.
	pollInterval = time.Second
	// probeTimeout bounds one health request.
	probeTimeout = 5 * time.Second
	// drainTimeout bounds draining a removed worker.
	drainTimeout = 2 * time.Minute
	// corednsReadyTimeout bounds the wait for CoreDNS to serve: its
	// image may have to be pulled first.
	corednsReadyTimeout = 5 * time.Minute
)

// Options configures an Installer.
type Options struct {
	Logger *slog.Logger
	// Transport tunes the SSH connections (dial timeout, keepalive).
	Transport transport.Options
	Clock     func() time.Time
	// ImageDir is the directory on the singlecloud server that a
	// cluster's imageArchive is resolved in (never followed out of);
	// empty refuses every imageArchive.
	ImageDir string
	// ArtifactDir is the artifact cache on the singlecloud server
	// (package artifacts), absolute; empty refuses every install that
	// needs a release file.
	ArtifactDir string
	// ArtifactMirror is where release files are fetched from for
	// clusters without an artifactMirror of their own; empty means
	// their upstream addresses.
	ArtifactMirror string
}

// Installer runs zke's operations. It is safe for concurrent use on
// different clusters; the caller runs at most one operation per cluster.
type Installer struct {
	log    *slog.Logger
	dialer *transport.Dialer
	clock  func() time.Time
	// imageDir is Options.ImageDir.
	imageDir string
	// artifacts is the cache in Options.ArtifactDir (nil without one);
	// artifactMirror is Options.ArtifactMirror.
	artifacts      *artifacts.Cache
	artifactMirror string
}

// New returns an Installer.
func New(opts Options) (*Installer, error) {
	d, err := transport.NewDialer(opts.Transport)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	in := &Installer{log: opts.Logger, dialer: d, clock: opts.Clock, imageDir: opts.ImageDir, artifactMirror: opts.ArtifactMirror}
	if opts.ArtifactDir != "" {
		if in.artifacts, err = artifacts.New(opts.ArtifactDir, nil); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Create installs cfg on its hosts. prev is the state a cancelled or failed
// create left (zero for a new cluster): a step that prev's fingerprints
// show finished with the same inputs, and whose effect verifies as still
// in place, is skipped; every other step runs again and re-checks what is
// there, so a resumed create ends where a fresh one would, with the same
// CAs. It returns the new state, also on failure (the caller saves
// it so the next run resumes).
func (in *Installer) Create(ctx context.Context, cfg model.ClusterConfig, prev State, sink Sink) (State, error) {
	r, err := in.newRun(cfg, prev, sink)
	if err != nil {
		return prev, err
	}
	defer r.close()
	err = workflow.Run(ctx, r.createSteps(), r.workflowSink(), r.runOptions(prev))
	return r.result(err)
}

// Update applies cfg to a cluster whose last applied configuration is in
// prev: new etcd members join one at a time, new workers join, removed
// workers are drained, deleted and cleaned. A resumed update skips the
// steps it verifiably finished, as Create does. A failure is returned as
// an error, never as success.
func (in *Installer) Update(ctx context.Context, cfg model.ClusterConfig, prev State, sink Sink) (State, error) {
	if prev.Applied == nil {
		return in.Create(ctx, cfg, prev, sink)
	}
	r, err := in.newRun(cfg, prev, sink)
	if err != nil {
		return prev, err
	}
	defer r.close()
	err = workflow.Run(ctx, r.updateSteps(), r.workflowSink(), r.runOptions(prev))
	return r.result(err)
}

// Remove stops and removes zke's containers and deletes zke's directories
// on every node of cfg; nothing else on the hosts is touched. A node that
// cannot be reached fails the remove unless force is set, in which case
// it is reported and skipped.
func (in *Installer) Remove(ctx context.Context, cfg model.ClusterConfig, prev State, sink Sink, force bool) error {
	r, err := in.newRun(cfg, prev, sink)
	if err != nil {
		return err
	}
	defer r.close()
	return workflow.Run(ctx, r.removeSteps(force), r.workflowSink(), workflow.RunOptions{Clock: in.clock})
}

// run is one operation on one cluster.
type run struct {
	in     *Installer
	cfg    model.ClusterConfig
	nodes  []node
	images map[string]string
	sink   Sink
	// deadlines are the steps' deadlines: zke's defaults with the
	// cluster's stepDeadlines.
	deadlines map[string]time.Duration

	mu      sync.Mutex
	state   State
	clients map[string]*transport.Client // by node name
	dockers map[string]*runtime.Docker
	facts   map[string]nodeFacts
	// fetched are the release files this run fetched, by upstream
	// address (step_artifacts.go).
	fetchMu sync.Mutex
	fetched map[string]artifacts.Fetched
}

// nodeFacts is what preflight learnt about a node.
type nodeFacts struct {
	docker runtime.Info
	// canPrivileged is false when the node's capability bounding set
	// lacks a capability Docker's --privileged asks for (seen on some
	// VMs): privileged containers are then built from cap-add ALL minus
	// the missing ones.
	canPrivileged bool
	missingCaps   []string
	// iface is the interface of the node's internal address, where
	// keepalived puts the shared endpoint's virtual IP (control-plane
	// nodes of a cluster with one).
	iface string
	// network is the network of the node's internal address, read from
	// its interface (as iface; workers of a bridge cluster too:
	// preflight_segment.go); invalid for a point-to-point address.
	network netip.Prefix
	// vip is what the node found of that virtual IP on its network
	// (endpoint_vip.go).
	vip vipSight
	// cri is what the worker's container runtime said over CRI
	// (preflight_cni.go).
	cri criFacts
	// dns is how the node resolves names (workers; preflight_dns.go).
	dns nodeDNS
}

func (in *Installer) newRun(cfg model.ClusterConfig, prev State, sink Sink) (*run, error) {
	images, err := imagesOf(cfg)
	if err != nil {
		return nil, workflow.UserFixable(err)
	}
	deadlines, err := stepDeadlines(cfg)
	if err != nil {
		return nil, workflow.UserFixable(err)
	}
	st := prev.Clone()
	if st.HostKeys == nil {
		st.HostKeys = map[string]string{}
	}
	return &run{
		in: in, cfg: cfg, nodes: nodesOf(cfg), images: images, sink: sink, state: st, deadlines: deadlines,
		clients: map[string]*transport.Client{}, dockers: map[string]*runtime.Docker{}, facts: map[string]nodeFacts{},
	}, nil
}

// runOptions are the workflow's options for a Create or Update resumed
// from prev: prev's fingerprints let it skip verified steps.
func (r *run) runOptions(prev State) workflow.RunOptions {
	return workflow.RunOptions{Done: maps.Clone(prev.Fingerprints), Clock: r.in.clock}
}

// close ends every SSH connection of the run.
func (r *run) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.dockers {
		_ = d.Close()
	}
	for _, c := range r.clients {
		_ = c.Close()
	}
}

// result returns the state after the run with err as the run's error.
func (r *run) result(err error) (State, error) {
	r.mu.Lock()
	st := r.state.Clone()
	r.mu.Unlock()
	if err == nil {
		applied := r.cfg
		applied.SSHKey = ""
		st.Applied = &applied
	}
	return st, err
}

// snapshot returns a copy of the run's current state.
func (r *run) snapshot() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state.Clone()
}

// update edits the run's state under its lock.
func (r *run) update(fn func(st *State)) {
	r.mu.Lock()
	fn(&r.state)
	r.mu.Unlock()
}

// workflowSink adapts the caller's Sink: a checkpoint carries the state.
func (r *run) workflowSink() workflow.Sink { return runSink{r} }

type runSink struct{ r *run }

func (s runSink) Progress(p workflow.Progress) { s.r.sink.Progress(p) }
func (s runSink) Log(l workflow.Line)          { s.r.sink.Log(l) }
func (s runSink) Stalled(st workflow.Stall)    { s.r.sink.Stalled(st) }

// save hands the run's state to the caller in the middle of a step, before
// a change that a later run must know about (an etcd member added).
func (r *run) save(ctx context.Context) error {
	if err := r.sink.Checkpoint(ctx, "", r.snapshot()); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

func (s runSink) Checkpoint(ctx context.Context, step, fingerprint string) error {
	s.r.update(func(st *State) {
		if fingerprint == "" {
			delete(st.Fingerprints, step)
		} else {
			if st.Fingerprints == nil {
				st.Fingerprints = map[string]string{}
			}
			st.Fingerprints[step] = fingerprint
		}
		if !slices.Contains(st.Checkpoints, step) {
			st.Checkpoints = append(st.Checkpoints, step)
		}
	})
	return s.r.sink.Checkpoint(ctx, step, s.r.snapshot())
}

// client returns the SSH client of node n (connected by the connect step).
func (r *run) client(n node) (*transport.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.clients[n.Name]
	if !ok {
		return nil, &workflow.NodeError{Node: n.Name, Err: errors.New("not connected")}
	}
	return c, nil
}

// docker returns the Docker runtime of node n.
func (r *run) docker(n node) (*runtime.Docker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.dockers[n.Name]
	if !ok {
		return nil, &workflow.NodeError{Node: n.Name, Err: errors.New("docker not connected")}
	}
	return d, nil
}

func (r *run) factsOf(n node) nodeFacts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.facts[n.Name]
}

// nodeErr wraps err as a failure on n.
func nodeErr(n node, err error, hint string) error {
	if err == nil {
		return nil
	}
	return &workflow.NodeError{Node: n.Name, Err: err, Hint: hint}
}

// poll calls check every pollInterval until it returns true, ctx ends or
// timeout passes; the error then says what was awaited and the last
// failure. A check error made with stopPolling ends the wait at once with
// that error. While it waits, on's reporter is told what it waits for and
// the last failure (see waitOn).
func poll(ctx context.Context, on waitOn, timeout time.Duration, what string, check func(ctx context.Context) (bool, error)) error {
	return pollEvery(ctx, on, pollInterval, timeout, what, check)
}

// pollEvery is poll with the pause between checks given.
func pollEvery(ctx context.Context, on waitOn, interval, timeout time.Duration, what string, check func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer on.done()
	var last error
	for {
		ok, err := check(ctx)
		if ok {
			return nil
		}
		var stop *stopError
		if errors.As(err, &stop) {
			return fmt.Errorf("%s: %w", what, stop.err)
		}
		if err != nil {
			last = err
		}
		on.waiting(what, last)
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("%s: not within %s: %w", what, timeout, errors.Join(ctx.Err(), last))
		case <-t.C:
		}
	}
}

// stopPolling marks a check's error as final: waiting longer cannot
// change the answer.
func stopPolling(err error) error { return &stopError{err} }

type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// KubernetesVersions lists the releases this installer can install, so
// that a request for another is refused before anything is saved.
func (i *Installer) KubernetesVersions() []string { return KubernetesVersions() }

// KeptVersions lists the releases a created cluster may stay on (and an
// upgrade revert to) although no cluster is created at them any more.
func (i *Installer) KeptVersions() []string { return KeptVersions() }
