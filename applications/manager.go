package applications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage"
)

// Options configures New.
type Options struct {
	Store storage.Store
	Bus   *pubsub.Bus
	// Operators maps environments to their operators.
	Operators *operators.Registry
	Clusters  Clusters
	Logger    *slog.Logger
	// Clock drives deadlines and the queue's delays; nil is the real
	// clock.
	Clock clock.WithTicker
	// Workers is how many instances are handled at once; 0 is 4.
	Workers int
	// PollInterval is how often an install looks at its replicas; 0 is
	// 2 s.
	PollInterval time.Duration
	// Resync is how often an Installed instance is applied again, so
	// that what drifted (a Deployment deleted by hand, a container
	// removed) comes back; 0 is 10 minutes.
	Resync time.Duration
	// CallTimeout bounds one call to an operator; 0 is 2 minutes.
	CallTimeout time.Duration
	// UninstallTimeout bounds an uninstall before the instance is
	// Failed; 0 is 10 minutes.
	UninstallTimeout time.Duration
}

// Manager is the application-instance manager. Its methods are safe for
// concurrent use.
type Manager struct {
	opts  Options
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[string]

	mu        sync.Mutex
	envs      map[string]envRecord
	instances map[string]*instance
	// running holds the cancel function of each instance's handler
	// while it runs, so that a new spec or an uninstall interrupts it.
	running map[string]context.CancelFunc

	// fmu guards followers, the live readers of each instance's log; it
	// is taken last (after m.mu and an instance's mu).
	fmu       sync.Mutex
	followers map[string]map[*follower]struct{}
}

// instance is one application instance in memory: the stored record, and
// what the running install saw last.
type instance struct {
	mu       sync.Mutex
	rec      record
	progress string
	// applied is the hash and generation the running install has
	// applied; a restart forgets it, so the install applies again.
	applied int64
	// removed marks an instance purged or gone with its environment: no
	// write for it is accepted any more.
	removed bool
}

func (i *instance) snapshot() record {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.rec
}

// New returns a manager; Load reads the store, Run works.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil || opts.Operators == nil || opts.Clusters == nil {
		return nil, errors.New("applications: a store, an operator registry and the clusters are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 2 * time.Second
	}
	if opts.Resync <= 0 {
		opts.Resync = 10 * time.Minute
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 2 * time.Minute
	}
	if opts.UninstallTimeout <= 0 {
		opts.UninstallTimeout = 10 * time.Minute
	}
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 30*time.Second)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Clock: opts.Clock})
	return &Manager{opts: opts, log: opts.Logger.With("component", "applications"), queue: q,
		envs: map[string]envRecord{}, instances: map[string]*instance{}, running: map[string]context.CancelFunc{},
		followers: map[string]map[*follower]struct{}{}}, nil
}

// Load reads the environments and instances from the store and queues
// every instance: whatever phase a crash left, its handler picks it up.
func (m *Manager) Load() (int, error) {
	envs, err := m.opts.Store.List(storage.BucketEnvironments)
	if err != nil {
		return 0, fmt.Errorf("applications: load environments: %w", err)
	}
	apps, err := m.opts.Store.List(storage.BucketApplications)
	if err != nil {
		return 0, fmt.Errorf("applications: load instances: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, kv := range envs {
		var r envRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return 0, fmt.Errorf("applications: environment %s: %w", kv.Key, err)
		}
		m.envs[kv.Key] = r
	}
	for _, kv := range apps {
		var r record
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			return 0, fmt.Errorf("applications: instance %s: %w", kv.Key, err)
		}
		m.instances[kv.Key] = &instance{rec: r}
		m.queue.Add(kv.Key)
	}
	return len(apps), nil
}

// Run handles instances until ctx ends, then waits for its workers.
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range m.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m.next(ctx) {
			}
		}()
	}
	ticker := m.opts.Clock.NewTicker(m.opts.Resync)
	defer ticker.Stop()
	var deleted <-chan pubsub.Event
	if m.opts.Bus != nil {
		sub := m.opts.Bus.Subscribe()
		defer sub.Close()
		deleted = sub.C()
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case e, ok := <-deleted:
			if !ok {
				deleted = nil
			} else if e.Kind == pubsub.ClusterDeleted {
				m.forgetCluster(e.Cluster)
			}
		case <-ticker.C():
			m.resync()
		}
	}
	m.queue.ShutDown()
	m.mu.Lock()
	for _, cancel := range m.running {
		cancel()
	}
	m.mu.Unlock()
	wg.Wait()
}

// resync queues every Installed instance, to be applied again, and
// forgets the instances of clusters deleted without this manager hearing
// of it.
func (m *Manager) resync() {
	m.mu.Lock()
	envs := map[string]bool{}
	for key, inst := range m.instances {
		env, _ := splitKey(key)
		envs[env] = true
		if inst.snapshot().Phase == PhaseInstalled {
			m.queue.Add(key)
		}
	}
	m.mu.Unlock()
	for env := range envs {
		m.forgetCluster(env)
	}
}

// next handles one queued instance; false once the queue is shut down.
func (m *Manager) next(ctx context.Context) bool {
	key, quit := m.queue.Get()
	if quit {
		return false
	}
	defer m.queue.Done(key)
	hctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	inst, ok := m.instances[key]
	m.running[key] = cancel
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.running, key)
		m.mu.Unlock()
		cancel()
	}()
	if !ok {
		m.queue.Forget(key)
		return true
	}
	after, err := m.handle(hctx, key, inst)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		m.log.Warn("application handler", "instance", key, "error", err)
		m.queue.AddRateLimited(key)
	case after > 0:
		m.queue.Forget(key)
		m.queue.AddAfter(key, after)
	case after == 0:
		m.queue.Forget(key)
	default:
		m.queue.Forget(key)
		m.queue.Add(key)
	}
	return true
}

// kick interrupts key's running handler and queues key again: its phase
// or spec changed under it.
func (m *Manager) kick(key string) {
	m.mu.Lock()
	if cancel, ok := m.running[key]; ok {
		cancel()
	}
	m.mu.Unlock()
	m.queue.Add(key)
}
