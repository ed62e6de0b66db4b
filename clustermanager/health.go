package clustermanager

import (
	"context"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/kubeclient"
)

// healthLoop probes the ready clusters until ctx ends. A healthy cluster is
// probed every HealthInterval; one whose last probe failed is probed three
// times as often, so an outage is confirmed (FailureThreshold failures in
// a row) well within three intervals.
func (m *Manager) healthLoop(ctx context.Context) {
	tick := m.suspectInterval()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.sweep(ctx, false)
		}
	}
}

// suspectInterval is how soon a cluster whose probe failed is probed again.
func (m *Manager) suspectInterval() time.Duration {
	return max(m.opts.HealthInterval/3, 10*time.Millisecond)
}

// sweep probes every ready cluster that is due (all of them with force),
// at most HealthWorkers at a time, and returns when all probes are done.
func (m *Manager) sweep(ctx context.Context, force bool) {
	now := m.opts.Clock()
	var due []*entry
	for _, e := range m.readyEntries() {
		e.mu.Lock()
		ok := force || !now.Before(e.nextAt)
		e.mu.Unlock()
		if ok {
			due = append(due, e)
		}
	}
	work := make(chan *entry)
	var wg sync.WaitGroup
	for i := 0; i < min(m.opts.HealthWorkers, len(due)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range work {
				m.probe(ctx, e)
			}
		}()
	}
	for _, e := range due {
		select {
		case work <- e:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
}

// probe checks one cluster's /readyz within ProbeTimeout and applies the
// hysteresis: FailureThreshold failures → Unreachable, 1 success → Running.
func (m *Manager) probe(ctx context.Context, e *entry) {
	client := e.clientSnapshot()
	if client == nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	began := time.Now()
	err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(pctx).Error()
	cancel()
	if ctx.Err() != nil {
		return
	}
	m.opts.Observer.ProbeDone(time.Since(began), err)
	now := m.opts.Clock()
	e.mu.Lock()
	if err == nil {
		e.failures = 0
		e.nextAt = now.Add(m.opts.HealthInterval)
	} else {
		e.failures++
		e.nextAt = now.Add(m.suspectInterval())
	}
	failures := e.failures
	e.mu.Unlock()

	switch {
	case err == nil && e.machine.Can(fsm.EventReachable):
		m.fireHealth(ctx, e, fsm.EventReachable, "")
	case err != nil && e.machine.Can(fsm.EventUnreachable) && failures >= m.opts.FailureThreshold:
		m.fireHealth(ctx, e, fsm.EventUnreachable, classify(e.name, err).Error())
	case err != nil:
		m.log.Debug("health probe failed", "cluster", e.name, "failures", failures, "err", redactedError{err})
	}
	if err == nil {
		m.probeDataPlane(ctx, e, client)
	}
}

// fireHealth fires a health event on e's worker. The state allowed it when
// the probe ended, so the worker runs no operation and the event waits at
// most for a short item; if an operation began meanwhile, the machine
// refuses the event and the next probe decides again.
func (m *Manager) fireHealth(ctx context.Context, e *entry, ev fsm.Event, reason string) {
	err := m.queue.do(ctx, e.name, string(ev), func(context.Context) error {
		if !e.machine.Can(ev) {
			return nil
		}
		return e.machine.Fire(ctx, ev, func(r *record) { r.Reason = reason })
	})
	if err != nil {
		m.log.Warn("health transition not saved", "cluster", e.name, "event", ev, "err", err)
		return
	}
	m.log.Info("cluster health changed", "cluster", e.name, "status", e.machine.Current(), "reason", reason)
}

// probeDataPlane checks a created cluster's data plane within
// ProbeTimeout and keeps what it found for the view (dataPlaneProblem);
// an imported cluster's data plane is not singlecloud's to judge.
func (m *Manager) probeDataPlane(ctx context.Context, e *entry, client kubeclient.Interface) {
	r := e.record()
	if r == nil || r.Kind != KindCreated {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, m.opts.ProbeTimeout)
	defer cancel()
	at := m.opts.Clock()
	problem, known := dataPlaneProblem(pctx, client, r.Config)
	if !known || ctx.Err() != nil {
		return
	}
	e.setDataPlane(problem, at)
}
