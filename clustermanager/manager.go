// Package clustermanager owns every cluster singlecloud manages: the ready
// and unready lists of SPEC §2, every cluster operation (import, delete,
// cancel), the connectors that bring imported clusters to Running, the
// health loop that keeps their status honest, and the reload of every stored
// cluster at start-up. Every state change goes through the cluster's fsm, and
// every transition is written to the store before it is announced on the bus.
package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/snapshots"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/validation"
)

const (
	// DefaultHealthInterval is how often a healthy cluster is probed: often
	// enough to notice an outage within half a minute, rarely enough that a
	// thousand clusters cost little.
	DefaultHealthInterval = 10 * time.Second
	// DefaultProbeTimeout bounds one health probe or connection attempt; an
	// API server slower than this is as good as down.
	DefaultProbeTimeout = 5 * time.Second
	// DefaultHealthWorkers bounds concurrent probes in one sweep.
	DefaultHealthWorkers = 64
	// DefaultFailureThreshold is how many consecutive failed probes mark a
	// Running cluster Unreachable; one success brings it back.
	DefaultFailureThreshold = 3
	// DefaultConnectWorkers bounds concurrent connection attempts, so a
	// reload of thousands of clusters does not open thousands of sockets.
	DefaultConnectWorkers = 32
	// DefaultBackoffInitial and DefaultBackoffMax shape the retry of a
	// transient connect failure: quick at first, capped so a returning
	// cluster is noticed within half a minute.
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 30 * time.Second
	// DefaultRequestTimeout bounds a live read (nodes, namespaces).
	DefaultRequestTimeout = 15 * time.Second
)

// Options configures a Manager. Store, Sealer and Bus are required.
type Options struct {
	Store  storage.Store
	Sealer storage.Sealer
	Bus    *pubsub.Bus
	// Hosts resolves the registered hosts nodes may name; nil allows
	// none.
	Hosts HostDirectory
	// Addresses is which node addresses are dialed: the zero value
	// refuses link-local and metadata ones (validation.AddressPolicy).
	Addresses validation.AddressPolicy
	// Installer creates, updates and removes created clusters; nil
	// allows imports only.
	Installer Installer
	// Checker runs a create's checks against a registered host
	// (CheckHost); nil refuses host checks.
	Checker          HostChecker
	Logger           *slog.Logger
	Clock            func() time.Time
	HealthInterval   time.Duration
	ProbeTimeout     time.Duration
	HealthWorkers    int
	FailureThreshold int
	ConnectWorkers   int
	BackoffInitial   time.Duration
	BackoffMax       time.Duration
	RequestTimeout   time.Duration
	// OnDelete, if set, runs inside the transaction that removes a
	// deleted cluster's rows, so that rows of other packages naming the
	// cluster (users' project grants) go with it, atomically: a grant to
	// a deleted cluster never survives to apply to a new cluster of the
	// same name. An error keeps the cluster Deleting.
	OnDelete func(tx storage.Tx, cluster string) error
	// Snapshots stores the clusters' etcd snapshots; nil disables
	// snapshots (and the automatic one before an operation).
	Snapshots *snapshots.Store
	// DrillTimeout bounds one snapshot's restore drill; 0 is
	// snapshots' default.
	DrillTimeout time.Duration
	// Observer learns of operations, steps and health probes (metrics);
	// nil observes nothing.
	Observer Observer
}

func (o *Options) fill() error {
	if o.Store == nil || o.Sealer == nil || o.Bus == nil {
		return errors.New("clustermanager: Store, Sealer and Bus are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Observer == nil {
		o.Observer = noObserver{}
	}
	setDur(&o.HealthInterval, DefaultHealthInterval)
	setDur(&o.ProbeTimeout, DefaultProbeTimeout)
	setDur(&o.BackoffInitial, DefaultBackoffInitial)
	setDur(&o.BackoffMax, DefaultBackoffMax)
	setDur(&o.RequestTimeout, DefaultRequestTimeout)
	setInt(&o.HealthWorkers, DefaultHealthWorkers)
	setInt(&o.FailureThreshold, DefaultFailureThreshold)
	setInt(&o.ConnectWorkers, DefaultConnectWorkers)
	return nil
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

func setInt(i *int, def int) {
	if *i <= 0 {
		*i = def
	}
}

// Manager is the cluster manager. Create it with New, load the store with
// Load, and drive it with Run.
type Manager struct {
	opts  Options
	log   *slog.Logger
	hooks *hooks
	repo  *repository
	// queue runs each cluster's work on a worker of its own.
	queue *workQueue
	eta   *etaModel
	// concludeRetry is how long an outcome the store refused waits
	// before it is written again (a constant; tests shorten it).
	concludeRetry time.Duration
	// drill restores each new snapshot on this server (nil without a
	// snapshot store); drills is its queue.
	drill   *snapshots.Driller
	drills  chan drillJob
	connSem chan struct{}
	// parseSem bounds the CPU-bound part of connecting (parsing
	// kubeconfigs) to half the CPUs, so that a reload of thousands of
	// clusters leaves the rest to serving the API.
	parseSem chan struct{}

	root   context.Context // parent of every operation; cancelled when Run ends
	cancel context.CancelFunc
	// running is true while Run is probing and operations may start:
	// readiness (GET /readyz) reports it.
	running atomic.Bool

	// views counts the changes of what List returns, and the transitions
	// under way (Generation).
	views   atomic.Uint64
	mu      sync.RWMutex
	all     map[string]*entry // every cluster, including ones mid-create
	ready   map[string]*entry // Running, Unreachable
	unready map[string]*entry // every other state
}

// New checks opts and returns an empty manager.
func New(opts Options) (*Manager, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	root, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts:     opts,
		log:      opts.Logger,
		connSem:  make(chan struct{}, opts.ConnectWorkers),
		parseSem: make(chan struct{}, max(1, goruntime.GOMAXPROCS(0)/2)),
		root:     root,
		cancel:   cancel,
		all:      map[string]*entry{},
		ready:    map[string]*entry{},
		unready:  map[string]*entry{},
	}
	m.hooks = &hooks{m: m}
	m.repo = &repository{store: opts.Store, sealer: opts.Sealer, clock: opts.Clock, onDelete: opts.OnDelete}
	m.queue = newWorkQueue(root)
	m.eta = &etaModel{}
	m.concludeRetry = defaultConcludeRetry
	if opts.Snapshots != nil {
		m.drill = snapshots.NewDriller(opts.Snapshots, opts.DrillTimeout)
		m.drills = make(chan drillJob, drillQueueSize)
	}
	return m, nil
}

// Running reports whether Run is running and its context has not ended.
func (m *Manager) Running() bool { return m.running.Load() && m.root.Err() == nil }

// Run probes the ready clusters until ctx ends, then cancels every running
// operation and returns once all of them have stopped.
func (m *Manager) Run(ctx context.Context) error {
	m.running.Store(true)
	defer m.running.Store(false)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		m.healthLoop(ctx)
	}()
	go func() {
		defer wg.Done()
		m.certLoop(ctx.Done())
	}()
	go func() {
		defer wg.Done()
		m.snapshotLoop(ctx)
	}()
	go func() {
		defer wg.Done()
		m.drillLoop(ctx)
	}()
	<-ctx.Done()
	m.cancel()
	wg.Wait()
	m.queue.wait()
	return nil
}

// lookup returns the entry of name or ErrNotFound.
func (m *Manager) lookup(name string) (*entry, error) {
	m.mu.RLock()
	e, ok := m.all[name]
	m.mu.RUnlock()
	if !ok {
		return nil, notFound(name)
	}
	return e, nil
}

// reserve adds a fresh entry for name, failing if the name is taken.
func (m *Manager) reserve(name string, initial fsm.State, rec *record) (*entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.all[name]; ok {
		return nil, fmt.Errorf("cluster %s: %w", name, ErrDuplicate)
	}
	e := &entry{name: name, rec: rec, certs: certCache{announced: -1}, views: &m.views}
	if rec.CertWarnedWithin != nil {
		e.certs.announced = *rec.CertWarnedWithin
	}
	e.machine = fsm.New[change](name, initial, m.hooks)
	m.all[name] = e
	if initial != fsm.StateNew {
		m.placeLocked(e, initial)
	}
	m.views.Add(1)
	return e, nil
}

// release drops an entry whose first transition failed to persist.
func (m *Manager) release(e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.all[e.name] == e {
		delete(m.all, e.name)
		delete(m.ready, e.name)
		delete(m.unready, e.name)
		m.views.Add(1)
	}
}

// placeLocked puts e in the list its state belongs to.
func (m *Manager) placeLocked(e *entry, s fsm.State) {
	switch {
	case s == fsm.StateDeleted:
		delete(m.all, e.name)
		delete(m.ready, e.name)
		delete(m.unready, e.name)
	case s.Ready():
		delete(m.unready, e.name)
		m.ready[e.name] = e
	default:
		delete(m.ready, e.name)
		m.unready[e.name] = e
	}
}

// readyEntries returns the ready list, sorted by name.
func (m *Manager) readyEntries() []*entry {
	m.mu.RLock()
	out := make([]*entry, 0, len(m.ready))
	for _, e := range m.ready {
		out = append(out, e)
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
