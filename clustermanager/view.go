package clustermanager

import (
	"context"
	"sort"
	"time"

	"github.com/zdnscloud/singlecloud/certificates"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// Cluster is the read-only view of a cluster that the API shows. It never
// carries secrets: no kubeconfig, no SSH key.
type Cluster struct {
	Name          string
	Kind          Kind
	Status        fsm.State
	Reason        string // why it is Unavailable, the last transient connect error, or what of a Running cluster's data plane does not work
	Version       string // when ready
	NodeCount     int
	Config        *model.ClusterConfig // created clusters only; without secrets
	LastOperation *Operation
	// CertificateWarning is set when the cluster's first certificate to
	// expire is within 120 days (certificates.Thresholds).
	CertificateWarning *certificates.Warning
	// Actions are what an admin may ask of the cluster now (check).
	Actions   ActionSet
	CreatedAt time.Time
	UpdatedAt time.Time
	// Revision changes whenever anything above but Status changes, so
	// that (Name, Revision, Status) identifies a view: callers may cache
	// renderings under it.
	Revision uint64
}

// view builds e's Cluster from its state and last saved record.
func (m *Manager) view(e *entry) Cluster {
	state := e.machine.Current()
	e.mu.Lock()
	r := e.rec
	lastErr := e.lastErr
	dataPlane := e.dataPlane
	if r != nil && !e.dataPlaneAt.After(r.UpdatedAt) {
		dataPlane = ""
	}
	rev := e.rev
	e.mu.Unlock()
	c := clusterView(r, state, standingOf(r), lastErr, rev, e.certWarning())
	if c.Reason == "" && state.Ready() {
		// A Running cluster whose data plane the last probe since its
		// record's last change found wanting says so (the leader's
		// view: followers do not probe).
		c.Reason = dataPlane
	}
	if m.opts.Snapshots == nil {
		c.Actions &^= ActionSet(0).With(ActionSnapshot, ActionRestore)
	}
	return c
}

// clusterView is the Cluster of record r in state: the leader's view of
// its entries and a follower's view of the stored rows are both this.
// st is r's standing, read while its secrets were open. lastErr is the
// reason shown while the cluster is busy and r has none.
func clusterView(r *record, state fsm.State, st standing, lastErr string, rev uint64, warning *certificates.Warning) Cluster {
	c := Cluster{
		Name:      r.Name,
		Kind:      r.Kind,
		Status:    state,
		Reason:    r.Reason,
		NodeCount: r.NodeCount,
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
		Revision:  rev,
	}
	if state.Ready() {
		c.Version = r.Version
	}
	if c.Reason == "" && state.Busy() {
		c.Reason = lastErr
	}
	if r.Config != nil {
		cfg, _ := splitConfig(*r.Config)
		c.Config = &cfg
	}
	c.LastOperation = r.LastOperation.clone()
	c.CertificateWarning = warning
	c.Actions = actionsOf(r, st, state)
	return c
}

// Generation says whether what List returns may have changed: the number
// moves with every change of a view's contents, a state, a cluster added
// or removed, counted where the change becomes visible or before. stable
// is false while a transition is under way (saved, its state about to
// move): a list taken then may miss it, so no list is to be kept or
// served for that number. With stable true, a list taken after reading
// gen shows at least everything gen stands for: a caller may serve a list
// it rendered for gen for as long as Generation still says gen, stable.
func (m *Manager) Generation() (gen uint64, stable bool) {
	w := m.views.Load()
	return w & generationMask, w>>pendingShift == 0
}

// The views word (Manager.views) packs the generation, in its low bits,
// and the count of transitions under way, above pendingShift. One word,
// so that a reader sees both at one instant.
const (
	pendingShift          = 40
	pendingOne     uint64 = 1 << pendingShift
	generationMask        = pendingOne - 1
)

// beginTransition counts a transition about to be saved (before its state
// can move) and moves the generation.
func (m *Manager) beginTransition() { m.views.Add(pendingOne + 1) }

// abortTransition uncounts a transition whose save failed: its state does
// not move.
func (m *Manager) abortTransition() { m.views.Add(^(pendingOne - 1)) } // minus pendingOne

// endTransition uncounts a transition whose state has moved, and moves the
// generation again.
func (m *Manager) endTransition() { m.views.Add(^(pendingOne - 1) + 1) } // 1 minus pendingOne

// List returns every cluster, sorted by name. With onlyReady, only the
// ready list.
func (m *Manager) List(onlyReady bool) []Cluster {
	m.mu.RLock()
	src := m.all
	if onlyReady {
		src = m.ready
	}
	es := make([]*entry, 0, len(src))
	for _, e := range src {
		es = append(es, e)
	}
	m.mu.RUnlock()
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	out := make([]Cluster, 0, len(es))
	for _, e := range es {
		if !e.machine.Current().Listed() {
			continue // reserved, first write not done yet
		}
		out = append(out, m.view(e))
	}
	return out
}

// Get returns one cluster.
func (m *Manager) Get(name string) (Cluster, error) {
	e, err := m.lookup(name)
	if err != nil {
		return Cluster{}, err
	}
	if !e.machine.Current().Listed() {
		return Cluster{}, notFound(name)
	}
	return m.view(e), nil
}

// readyEntry returns name's entry if it is in the ready list, else a
// *NotReadyError or ErrNotFound.
func (m *Manager) readyEntry(name string) (*entry, error) {
	e, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	if s := e.machine.Current(); !s.Ready() {
		if s == fsm.StateNew {
			return nil, notFound(name)
		}
		return nil, &NotReadyError{Cluster: name, Status: s}
	}
	return e, nil
}

// Kubeconfig returns the admin kubeconfig of a ready cluster. It is a
// secret: the caller must check that the user is an administrator.
func (m *Manager) Kubeconfig(name string) ([]byte, error) {
	e, err := m.readyEntry(name)
	if err != nil {
		return nil, err
	}
	kc := e.record().secrets.Kubeconfig
	return append([]byte(nil), kc...), nil
}

// Client returns a client for live reads of a ready cluster.
func (m *Manager) Client(name string) (kubeclient.Interface, error) {
	e, err := m.readyEntry(name)
	if err != nil {
		return nil, err
	}
	c := e.clientSnapshot()
	if c == nil {
		return nil, &NotReadyError{Cluster: name, Status: e.machine.Current()}
	}
	return c, nil
}

// RequestContext bounds a live read of a cluster.
func (m *Manager) RequestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, m.opts.RequestTimeout)
}
