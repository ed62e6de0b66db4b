package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/hosts/sysinfo"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// ProbeOptions tune the connectivity checks; zero values take the
// defaults.
type ProbeOptions struct {
	// Interval is the time between two sweeps over every host (30 s).
	Interval time.Duration
	// Timeout bounds one probe: connect, log in, and the system
	// information script when it runs (10 s).
	Timeout time.Duration
	// FailThreshold is how many probes in a row must fail before a host
	// that was reachable shows Unreachable (2): one lost packet does
	// not flap it.
	FailThreshold int
	// Workers bounds the probes running at once (8).
	Workers int
	// InfoEvery is how old the system information may get before a
	// probe collects it again (24 h); it is also collected whenever a
	// host becomes reachable.
	InfoEvery time.Duration
}

func (o ProbeOptions) withDefaults() ProbeOptions {
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.FailThreshold <= 0 {
		o.FailThreshold = 2
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	if o.InfoEvery <= 0 {
		o.InfoEvery = 24 * time.Hour
	}
	return o
}

// Target is what a probe needs to log in to a host.
type Target struct {
	Name, Address, User string
	Port                int
	// Key is the private key (PEM); HostKey the pinned host key, "" on
	// first contact.
	Key     []byte
	HostKey string
}

// ProbeResult is what a successful probe saw.
type ProbeResult struct {
	// HostKey is the key the host presented.
	HostKey string
	// Info is the system information, when the probe was asked for it;
	// InfoError says why it could not be collected (the login worked).
	Info      *sysinfo.Info
	InfoError error
}

// Prober logs in to a host, and runs the system information script when
// collect is true. Its error says why the host cannot be reached.
type Prober interface {
	Probe(ctx context.Context, t Target, collect bool) (ProbeResult, error)
}

// Run probes every host each Interval, and a host at once when it is
// registered or its address changes, until ctx ends. A host is never
// probed twice at once: only this goroutine starts probes, and a sweep
// ends before the next begins.
func (m *Manager) Run(ctx context.Context) {
	tick := time.NewTicker(m.opts.Probe.Interval)
	defer tick.Stop()
	defer m.cmdWG.Wait()
	defer m.cancel()
	m.sweep(ctx, m.names())
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-m.kick:
			m.sweep(ctx, []string{name})
		case <-tick.C:
			m.sweep(ctx, m.names())
		}
	}
}

// sweep probes names with at most Workers at once and returns when every
// probe has ended.
func (m *Manager) sweep(ctx context.Context, names []string) {
	sem := make(chan struct{}, m.opts.Probe.Workers)
	var wg sync.WaitGroup
	for _, name := range names {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m.probe(ctx, name)
		}()
	}
	wg.Wait()
}

// collectTimeout bounds the system information script, on top of the
// login's bound: a stuck df (a stale network mount) must not make a host
// that logs in fine look unreachable.
const collectTimeout = 30 * time.Second

// probe checks one host and records what it saw.
func (m *Manager) probe(ctx context.Context, name string) {
	t, gen, collect, err := m.target(name)
	if errors.Is(err, ErrNotFound) {
		return
	}
	var res ProbeResult
	if err == nil {
		budget := m.opts.Probe.Timeout
		if collect {
			budget += collectTimeout
		}
		pctx, cancel := context.WithTimeout(ctx, budget)
		res, err = m.opts.Prober.Probe(pctx, t, collect)
		cancel()
	}
	if ctx.Err() != nil {
		return
	}
	m.record(name, gen, res, err)
}

// target returns what probing name needs, the registration's generation,
// and whether to collect its system information. The error is
// ErrNotFound, or says why the key cannot be used.
func (m *Manager) target(name string) (Target, int, bool, error) {
	m.mu.Lock()
	r, ok := m.hosts[name]
	var cur record
	if ok {
		cur = r.clone()
	}
	m.mu.Unlock()
	if !ok {
		return Target{}, 0, false, fmt.Errorf("host %s: %w", name, ErrNotFound)
	}
	key, err := m.opts.Sealer.Open(cur.SealedKey, storage.AAD(storage.BucketHosts, name))
	if err != nil {
		return Target{}, cur.Generation, false, errors.New("its SSH key cannot be unsealed with this server's key: register the key again (PUT with sshKey)")
	}
	now := m.opts.Clock()
	collect := cur.Status != StatusReachable || cur.System == nil || now.Sub(cur.System.CollectedAt) >= m.opts.Probe.InfoEvery
	return Target{Name: name, Address: cur.Address, Port: cur.Port, User: cur.User, Key: key, HostKey: cur.HostKey}, cur.Generation, collect, nil
}

// record applies one probe's outcome to name's record, with hysteresis,
// and stores it when anything but the probe time changed. A probe of an
// earlier registration (updated or re-created meanwhile) is dropped.
func (m *Manager) record(name string, gen int, res ProbeResult, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.hosts[name]
	if !ok || cur.Generation != gen {
		return
	}
	now := m.opts.Clock().UTC()
	next := cur.clone()
	next.LastProbe = now
	status, reason, hint := StatusReachable, "", ""
	if err == nil {
		next.Failures = 0
		if next.HostKey == "" {
			next.HostKey = res.HostKey
		}
		switch {
		case res.Info != nil:
			next.System = res.Info
		case res.InfoError != nil:
			// Logged in, but the information could not be read: the
			// host is reachable; the last information stays, with why
			// it is not fresh.
			msg := "system information not collected: " + res.InfoError.Error()
			if next.System == nil {
				next.System = &sysinfo.Info{CollectedAt: now}
			}
			next.System.Warnings = []string{msg}
		}
	} else {
		next.Failures = min(next.Failures+1, m.opts.Probe.FailThreshold)
		status, reason = StatusUnreachable, err.Error()
		var ne *transport.NodeError
		if errors.As(err, &ne) {
			hint = ne.Hint
		}
		if next.Status == StatusReachable && next.Failures < m.opts.Probe.FailThreshold {
			status, reason, hint = next.Status, next.Reason, next.Hint
		}
	}
	if status != next.Status {
		m.log.Info("host status changed", "host", name, "from", next.Status, "to", status, "reason", reason)
		next.StatusSince = now
	}
	next.Status, next.Reason, next.Hint = status, reason, hint
	if changed(cur, &next) {
		if data, merr := json.Marshal(&next); merr == nil {
			if perr := m.opts.Store.Put(storage.BucketHosts, name, data); perr != nil {
				m.log.Warn("host status not stored", "host", name, "err", perr)
				return
			}
		}
	}
	m.hosts[name] = &next
}

// changed reports whether next differs from cur in anything but the
// probe time: only then is the record written.
func changed(cur, next *record) bool {
	a, b := *cur, *next
	a.LastProbe, b.LastProbe = time.Time{}, time.Time{}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) != string(jb)
}
