package clustermanager

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

// Create saves a new cluster (Creating) and starts installing it on its
// hosts in the background. Progress and the log are followed with
// FollowLog; the outcome is Running or Unavailable with the reason.
func (m *Manager) Create(ctx context.Context, cfg model.ClusterConfig) (Cluster, error) {
	if err := m.resolveHosts(&cfg); err != nil {
		return Cluster{}, err
	}
	cfg.ApplyDefaults()
	if err := validation.RequireSupportedVersion(m.opts.Addresses.CheckNodes(validation.ValidateCreate(cfg), cfg.Nodes, nil), cfg.KubernetesVersion, m.kubernetesVersions()); err != nil {
		return Cluster{}, err
	}
	if m.opts.Installer == nil {
		return Cluster{}, fmt.Errorf("create cluster %s: %w", cfg.Name, ErrNoInstaller)
	}
	now := m.opts.Clock().UTC()
	stored, sec := splitConfig(cfg)
	rec := &record{
		Name: cfg.Name, Kind: KindCreated, Config: &stored, CreatedAt: now, UpdatedAt: now,
		secrets: sec,
	}
	e, err := m.reserve(cfg.Name, fsm.StateNew, rec)
	if err != nil {
		return Cluster{}, err
	}
	if err := m.recheckHosts(cfg); err != nil {
		m.release(e)
		return Cluster{}, err
	}
	c, err := m.start(ctx, e, OpCreate, fsm.EventCreate, nil, true, false)
	if err != nil {
		m.release(e)
		return Cluster{}, err
	}
	return c, nil
}

// Update saves cfg as the cluster's desired configuration (Updating) and
// applies it in the background. On an Unavailable cluster whose create
// never finished, it resumes the create with cfg instead. An empty sshKey
// or registry password keeps the stored one (they are write-only).
func (m *Manager) Update(ctx context.Context, name string, cfg model.ClusterConfig) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if err := m.refuse(e, ActionUpdate); err != nil {
		return Cluster{}, err
	}
	rec := e.record()
	if cfg.SSHKey == "" {
		// The stored key first: nodes naming registered hosts must
		// share it (resolveHosts compares).
		cfg.SSHKey = rec.fullConfig().SSHKey
	}
	if err := m.resolveHosts(&cfg); err != nil {
		return Cluster{}, err
	}
	if cfg.Network == (model.Network{}) {
		// A request that leaves the network out keeps the cluster's:
		// the default changed (bridge, then flannel), and neither the
		// plugin nor its interface can.
		cfg.Network = rec.fullConfig().Network
	}
	if strings.TrimSpace(cfg.KubernetesVersion) == "" {
		// Likewise the release: the default moves with each build, and
		// an update that does not name one must not start an upgrade.
		cfg.KubernetesVersion = rec.fullConfig().KubernetesVersion
	}
	cfg.ApplyDefaults()
	if cfg.Name == "" {
		cfg.Name = name
	}
	old := rec.fullConfig()
	keepSecrets(&cfg, old)
	if cfg.Name != name {
		return Cluster{}, validation.Errors{{Field: "name", Reason: "cannot change after create"}}
	}
	if err := validation.RequireSupportedVersion(m.opts.Addresses.CheckNodes(validation.ValidateUpdate(old, cfg), cfg.Nodes, old.Nodes), cfg.KubernetesVersion, m.updateVersions(old.KubernetesVersion)); err != nil {
		return Cluster{}, err
	}
	kind, ev := OpUpdate, fsm.EventUpdate
	switch {
	case e.machine.Can(fsm.EventResume) && unfinishedCreate(rec):
		kind, ev = OpCreate, fsm.EventResume
	case cfg.KubernetesVersion != old.KubernetesVersion:
		kind = OpUpgrade
	}
	stored, sec := splitConfig(cfg)
	return m.start(ctx, e, kind, ev, func(r *record) {
		r.Config = &stored
		r.secrets.SSHKey, r.secrets.RegistryPasswords = sec.SSHKey, sec.RegistryPasswords
	}, true, false)
}

// Retry resumes the failed or cancelled operation of an Unavailable
// cluster: the create or update of a created cluster (from its last
// checkpoint, re-checking earlier steps), the connection of an imported
// one, or a delete that could not finish.
func (m *Manager) Retry(ctx context.Context, name string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	rec := e.record()
	if rec.Kind == KindImported {
		return m.Reconnect(ctx, name, "")
	}
	// Only a failed or cancelled operation is retried (resume is the
	// event only an Unavailable cluster allows); a healthy cluster is
	// changed with an update.
	if err := m.refuse(e, ActionRetry); err != nil {
		return Cluster{}, err
	}
	if rec.LastOperation != nil && rec.LastOperation.Type == OpDelete {
		return m.Delete(ctx, name, false)
	}
	kind, ev := OpCreate, fsm.EventResume
	switch {
	case unfinishedCreate(rec):
	case unfinishedRestore(rec):
		// A restore resumes with its snapshot and token: the members
		// it restored stay restored. It comes first: nothing else may
		// run on a cluster whose members may hold different data.
		kind, ev = OpRestore, fsm.EventRestore
	case rec.LastOperation != nil && rec.LastOperation.Type == OpRotateCertificates:
		// A rotation resumes with its cutoff: what it reissued stays.
		kind, ev = OpRotateCertificates, fsm.EventRotateCertificates
	case unfinishedUpgrade(rec):
		// An upgrade (or a revert) carries on node by node: the
		// nodes it finished are passed over.
		kind, ev = OpUpgrade, fsm.EventUpdate
	default:
		kind, ev = OpUpdate, fsm.EventUpdate
	}
	return m.start(ctx, e, kind, ev, nil, false, false)
}

// unfinishedCreate reports whether a created cluster never reached
// Running: its installer state has no applied configuration yet.
func unfinishedCreate(r *record) bool {
	return r.Kind == KindCreated && (r.secrets.ZKE == nil || r.secrets.ZKE.Applied == nil)
}

// kubernetesVersions lists the releases the installer can install; none
// without an installer (creates are then refused on their own).
func (m *Manager) kubernetesVersions() []string {
	if m.opts.Installer == nil {
		return nil
	}
	return m.opts.Installer.KubernetesVersions()
}

// updateVersions lists the releases an update of a cluster at current may
// ask for: those a create may, and current itself when it is one the
// installer keeps for clusters created by an earlier build.
func (m *Manager) updateVersions(current string) []string {
	versions := m.kubernetesVersions()
	if m.opts.Installer != nil && slices.Contains(m.opts.Installer.KeptVersions(), current) {
		versions = append([]string{current}, versions...)
	}
	return versions
}
