package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/validation"
)

var (
	// ErrNotFound reports a host that is not registered.
	ErrNotFound = errors.New("host not found")
	// ErrDuplicate reports a registration under a name already taken.
	ErrDuplicate = errors.New("host already registered")
	// ErrInUse reports a delete of a host that clusters' nodes name.
	ErrInUse = errors.New("host in use")
)

// Options are a Manager's dependencies and tunables; zero values take the
// defaults.
type Options struct {
	Store  storage.Store
	Sealer storage.Sealer
	// Clock is the time source; nil is time.Now.
	Clock func() time.Time
	// Logger receives status changes; nil discards them.
	Logger *slog.Logger
	// Probe tunes the connectivity checks.
	Probe ProbeOptions
	// Prober logs in to a host and collects what a probe needs; nil is
	// the SSH prober (ssh.go).
	Prober Prober
	// Executor runs commands on hosts; nil is SSH (ssh.go).
	Executor Executor
	// InUse names the clusters whose nodes name a host; a host in use is
	// not deleted. nil: none.
	InUse func(host string) []string
	// Addresses is which host addresses are registered: the zero value
	// refuses link-local and metadata ones (validation.AddressPolicy).
	Addresses validation.AddressPolicy
}

// Manager is the host manager: the registry and its probe loop (Run).
type Manager struct {
	opts  Options
	log   *slog.Logger
	mu    sync.Mutex
	hosts map[string]*record
	// kick asks the loop to probe one host now (a new registration).
	kick chan string
	// root bounds the commands, which outlive the requests that start
	// them; Run's end cancels it and waits for them (cmdWG).
	root   context.Context
	cancel context.CancelFunc
	cmdWG  sync.WaitGroup
	// lastGen is the last registration generation handed out (under mu).
	lastGen int
	// deleting holds the hosts a Delete is checking (under mu): Resolve
	// refuses them, so that a cluster created meanwhile either sees the
	// host gone or is seen by the check (see Delete).
	deleting map[string]bool
	// feeds holds the live output of the running commands, for
	// FollowCommand (commandstream.go).
	feeds feedRegistry
}

// New loads every registered host from the store.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil || opts.Sealer == nil {
		return nil, errors.New("hosts: a store and a sealer are required")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Probe = opts.Probe.withDefaults()
	if opts.Prober == nil {
		opts.Prober = sshProber{timeout: opts.Probe.Timeout}
	}
	if opts.Executor == nil {
		opts.Executor = sshProber{timeout: opts.Probe.Timeout}
	}
	m := &Manager{opts: opts, log: opts.Logger.With("component", "hosts"), hosts: map[string]*record{}, deleting: map[string]bool{}, kick: make(chan string, 64), feeds: newFeedRegistry()}
	m.root, m.cancel = context.WithCancel(context.Background())
	rows, err := opts.Store.List(storage.BucketHosts)
	if err != nil {
		return nil, fmt.Errorf("hosts: load: %w", err)
	}
	for _, kv := range rows {
		var r record
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return nil, fmt.Errorf("hosts: load %s: %w", kv.Key, err)
		}
		m.hosts[kv.Key] = &r
		m.lastGen = max(m.lastGen, r.Generation)
	}
	if err := m.interruptCommands(); err != nil {
		return nil, err
	}
	return m, nil
}

// List returns every host, sorted by name.
func (m *Manager) List() []Host {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Host, 0, len(m.hosts))
	for _, r := range m.hosts {
		out = append(out, r.clone().Host)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns one host.
func (m *Manager) Get(name string) (Host, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.hosts[name]
	if !ok {
		return Host{}, fmt.Errorf("host %s: %w", name, ErrNotFound)
	}
	return r.clone().Host, nil
}

// Create registers a host (its key sealed) and has it probed at once.
func (m *Manager) Create(ctx context.Context, spec model.HostSpec) (Host, error) {
	if err := m.opts.Addresses.CheckHost(validation.ValidateHost(spec, true), spec.Address, ""); err != nil {
		return Host{}, err
	}
	spec = defaults(spec)
	now := m.opts.Clock().UTC()
	r := record{Host: Host{Name: spec.Name, Address: spec.Address, Port: spec.Port, User: spec.User, Labels: spec.Labels,
		CreatedAt: now, Status: StatusUnknown, StatusSince: now}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.hosts[spec.Name]; dup {
		return Host{}, fmt.Errorf("host %s: %w", spec.Name, ErrDuplicate)
	}
	sealed, err := m.opts.Sealer.Seal([]byte(spec.SSHKey), storage.AAD(storage.BucketHosts, spec.Name))
	if err != nil {
		return Host{}, fmt.Errorf("host %s: seal its key: %w", spec.Name, err)
	}
	r.SealedKey = sealed
	m.lastGen++
	r.Generation = m.lastGen
	if err := m.persist(&r); err != nil {
		return Host{}, err
	}
	m.hosts[spec.Name] = &r
	m.kickLocked(spec.Name)
	return r.clone().Host, nil
}

// Update changes a host's registration; a spec without a key keeps the
// stored one. A changed address, port, user or key forgets the pinned
// host key and probes the host again at once.
func (m *Manager) Update(ctx context.Context, name string, spec model.HostSpec) (Host, error) {
	if spec.Name == "" {
		spec.Name = name
	}
	if spec.Name != name {
		return Host{}, validation.Errors{{Field: "name", Reason: "cannot change; register the host under the new name and delete this one"}}
	}
	var stored string
	if cur, err := m.Get(name); err == nil {
		stored = cur.Address
	}
	if err := m.opts.Addresses.CheckHost(validation.ValidateHost(spec, false), spec.Address, stored); err != nil {
		return Host{}, err
	}
	spec = defaults(spec)
	return m.edit(name, func(next *record) (bool, error) {
		moved := next.Address != spec.Address || next.Port != spec.Port || next.User != spec.User || spec.SSHKey != ""
		next.Address, next.Port, next.User, next.Labels = spec.Address, spec.Port, spec.User, spec.Labels
		if spec.SSHKey != "" {
			sealed, err := m.opts.Sealer.Seal([]byte(spec.SSHKey), storage.AAD(storage.BucketHosts, name))
			if err != nil {
				return false, fmt.Errorf("host %s: seal its key: %w", name, err)
			}
			next.SealedKey = sealed
		}
		if moved {
			// Another machine, or another way in: nothing observed of
			// the old registration holds.
			m.lastGen++
			next.HostKey, next.Generation = "", m.lastGen
			next.Status, next.StatusSince, next.Reason, next.Hint, next.Failures, next.System = StatusUnknown, m.opts.Clock().UTC(), "", "", 0, nil
		}
		return moved, nil
	})
}

// ForgetHostKey forgets the host key pinned for name (a reinstalled
// host) and probes it at once, which pins the key it presents now.
func (m *Manager) ForgetHostKey(ctx context.Context, name string) (Host, error) {
	h, err := m.edit(name, func(next *record) (bool, error) {
		m.lastGen++
		next.HostKey, next.Generation = "", m.lastGen
		return true, nil
	})
	if err == nil {
		m.log.Info("host key forgotten", "host", name)
	}
	return h, err
}

// edit changes name's record with fn under the lock, stores it, and has
// the host probed at once when fn says so.
func (m *Manager) edit(name string, fn func(next *record) (probe bool, err error)) (Host, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.hosts[name]
	if !ok {
		return Host{}, fmt.Errorf("host %s: %w", name, ErrNotFound)
	}
	next := cur.clone()
	probe, err := fn(&next)
	if err != nil {
		return Host{}, err
	}
	if err := m.persist(&next); err != nil {
		return Host{}, err
	}
	m.hosts[name] = &next
	if probe {
		m.kickLocked(name)
	}
	return next.clone().Host, nil
}

// Delete forgets a host, unless a cluster uses it. A cluster being created
// resolves its hosts, reserves its name, then resolves them again; Delete
// marks the host before asking who uses it, and Resolve refuses a marked
// host. So either the create's second resolve fails, or the create's
// reservation comes before the mark and the question sees it: a host
// never leaves while a cluster names it.
func (m *Manager) Delete(ctx context.Context, name string) error {
	m.mu.Lock()
	if _, ok := m.hosts[name]; !ok {
		m.mu.Unlock()
		return fmt.Errorf("host %s: %w", name, ErrNotFound)
	}
	if m.deleting[name] {
		m.mu.Unlock()
		return fmt.Errorf("host %s is being deleted by another request: %w", name, ErrInUse)
	}
	m.deleting[name] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.deleting, name)
		m.mu.Unlock()
	}()
	if m.opts.InUse != nil {
		if users := m.opts.InUse(name); len(users) > 0 {
			return fmt.Errorf("host %s: %w by cluster %s: remove the host's node from it first", name, ErrInUse, strings.Join(users, ", "))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.hosts[name]; !ok {
		return fmt.Errorf("host %s: %w", name, ErrNotFound)
	}
	if err := m.opts.Store.Delete(storage.BucketHosts, name); err != nil {
		return fmt.Errorf("host %s: delete: %w", name, err)
	}
	delete(m.hosts, name)
	return nil
}

// Resolve returns host name's registration with its key, for a cluster
// whose nodes name it.
func (m *Manager) Resolve(name string) (model.HostSpec, error) {
	m.mu.Lock()
	deleting := m.deleting[name]
	m.mu.Unlock()
	if deleting {
		return model.HostSpec{}, fmt.Errorf("host %s is being deleted: %w", name, ErrNotFound)
	}
	t, _, _, err := m.target(name)
	if err != nil {
		return model.HostSpec{}, err
	}
	h, err := m.Get(name)
	if err != nil {
		return model.HostSpec{}, err
	}
	return model.HostSpec{Name: name, Address: t.Address, Port: t.Port, User: t.User, SSHKey: string(t.Key), Labels: h.Labels}, nil
}

// persist writes r to the store (acknowledged once on disk).
func (m *Manager) persist(r *record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := m.opts.Store.Put(storage.BucketHosts, r.Name, data); err != nil {
		return fmt.Errorf("host %s: store: %w", r.Name, err)
	}
	return nil
}

// kickLocked queues name for an immediate probe; a full queue is left to
// the next sweep.
func (m *Manager) kickLocked(name string) {
	select {
	case m.kick <- name:
	default:
	}
}

// names returns the registered names, sorted.
func (m *Manager) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.hosts))
	for n := range m.hosts {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
