package clustermanager

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/certificates"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/storage"
)

// RowReader reads a store's rows without copying them, each with the
// revision that last wrote it; storage.Mirror is one.
type RowReader interface {
	storage.Reader
	Rows(b storage.Bucket, prefix string) ([]storage.Row, error)
	// RowsFrom is Rows from key start on.
	RowsFrom(b storage.Bucket, prefix, start string) ([]storage.Row, error)
}

// FollowerOptions configures NewFollower. Store and Sealer are required.
type FollowerOptions struct {
	// Store is the follower's copy of the store.
	Store RowReader
	// Sealer opens the rows' sealed secrets (the key file the replicas
	// share).
	Sealer storage.Sealer
	// Clock gives the time certificates' days left count from; nil means
	// time.Now.
	Clock func() time.Time
	// Changed returns a channel closed at Store's next change, for
	// FollowLog (storage.Mirror.Changed); nil follows no log.
	Changed func() <-chan struct{}
}

// warningRecheck is how often a follower recomputes a cluster's
// certificate warning when its row has not changed: days left change
// once a day.
const warningRecheck = time.Hour

// Follower answers the cluster manager's reads from the stored rows
// alone: a replica that does not lead serves them from its own copy of
// the store (issue 12) instead of asking the leader. It shows what the
// rows say: the state of a cluster's last saved transition, not what only
// the leader's memory holds (the reason of a connection attempt still
// retrying, the Connecting the leader derives for a Running row at its
// start until it has reconnected).
//
// Each row is decoded once per revision; its secrets are opened to read
// its certificates and then dropped.
type Follower struct {
	opts  FollowerOptions
	mu    sync.Mutex
	cache map[string]*followed
}

// followed is one row as last decoded.
type followed struct {
	modRev    int64
	rec       *record  // without secrets
	standing  standing // what the secrets said
	decodeErr error
	certs     []certificates.Certificate
	warning   *certificates.Warning
	warnedAt  time.Time
	// gen counts the warning's changes while the row stays the same,
	// for the view's Revision.
	gen uint64
}

// NewFollower returns a Follower of opts.Store.
func NewFollower(opts FollowerOptions) (*Follower, error) {
	if opts.Store == nil || opts.Sealer == nil {
		return nil, errors.New("new follower: Store and Sealer are required")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Follower{opts: opts, cache: map[string]*followed{}}, nil
}

// List returns every listed cluster, sorted by name; with onlyReady only
// the ready ones.
func (f *Follower) List(onlyReady bool) []Cluster {
	rows, err := f.opts.Store.Rows(storage.BucketClusters, "")
	if err != nil {
		return nil
	}
	now := f.opts.Clock()
	out := make([]Cluster, 0, len(rows))
	for _, row := range rows {
		c, ok := f.view(row, now)
		if !ok || (onlyReady && !c.Status.Ready()) {
			continue
		}
		out = append(out, c)
	}
	f.prune(rows)
	return out
}

// Get returns one listed cluster.
func (f *Follower) Get(name string) (Cluster, error) {
	row, err := f.row(name)
	if err != nil {
		return Cluster{}, err
	}
	c, ok := f.view(row, f.opts.Clock())
	if !ok {
		return Cluster{}, notFound(name)
	}
	return c, nil
}

// Operations returns the cluster's operation history, newest first, as
// Manager.Operations does.
func (f *Follower) Operations(name string) ([]Operation, error) {
	c, err := f.Get(name)
	if err != nil {
		return nil, err
	}
	ended, err := readHistory(f.opts.Store, name)
	if err != nil {
		return nil, err
	}
	if op := c.LastOperation; op.running() {
		return append([]Operation{*op}, ended...), nil
	}
	return ended, nil
}

// Certificates returns the certificate calendar of one cluster, soonest
// expiry first.
func (f *Follower) Certificates(name string) ([]certificates.Certificate, error) {
	row, err := f.row(name)
	if err != nil {
		return nil, err
	}
	now := f.opts.Clock()
	if _, ok := f.view(row, now); !ok {
		return nil, notFound(name)
	}
	return refreshed(f.decoded(row, now).certs, now), nil
}

// FleetCertificates returns the certificates of every cluster that expire
// within d from now (every one when d <= 0), soonest first.
func (f *Follower) FleetCertificates(d time.Duration) []ClusterCertificate {
	rows, err := f.opts.Store.Rows(storage.BucketClusters, "")
	if err != nil {
		return nil
	}
	now := f.opts.Clock()
	limit := now.Add(d)
	var out []ClusterCertificate
	for _, row := range rows {
		if _, ok := f.view(row, now); ok {
			out = appendDue(out, row.Key, refreshed(f.decoded(row, now).certs, now), d, limit)
		}
	}
	sortFleet(out)
	return out
}

// Kubeconfig returns the admin kubeconfig of a ready cluster. It is a
// secret: the caller must check that the user is an administrator.
func (f *Follower) Kubeconfig(name string) ([]byte, error) {
	row, err := f.row(name)
	if err != nil {
		return nil, err
	}
	c, ok := f.view(row, f.opts.Clock())
	switch {
	case !ok:
		return nil, notFound(name)
	case !c.Status.Ready():
		return nil, &NotReadyError{Cluster: name, Status: c.Status}
	}
	rec, err := decodeRecord(row.Value, f.opts.Sealer)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	return rec.secrets.Kubeconfig, nil
}

// row returns name's stored row, or ErrNotFound.
func (f *Follower) row(name string) (storage.Row, error) {
	rows, err := f.opts.Store.Rows(storage.BucketClusters, name)
	if err != nil {
		return storage.Row{}, fmt.Errorf("read cluster %s: %w", name, err)
	}
	for _, r := range rows {
		if r.Key == name {
			return r, nil
		}
	}
	return storage.Row{}, notFound(name)
}

// view is row's Cluster, and whether it is listed.
func (f *Follower) view(row storage.Row, now time.Time) (Cluster, bool) {
	d := f.decoded(row, now)
	rec, state := d.rec, d.rec.Status
	if d.decodeErr != nil {
		state = fsm.StateUnavailable
	}
	if !state.Listed() {
		return Cluster{}, false
	}
	c := clusterView(rec, state, d.standing, "", uint64(d.modRev)<<8|d.gen&0xff, d.warning)
	if c.Name == "" {
		c.Name = row.Key
	}
	return c, true
}

// decoded returns row as decoded at its revision, with its warning as of
// now (recomputed at most each warningRecheck).
func (f *Follower) decoded(row storage.Row, now time.Time) followed {
	f.mu.Lock()
	d, ok := f.cache[row.Key]
	if ok && d.modRev == row.ModRevision && now.Sub(d.warnedAt) < warningRecheck {
		out := *d
		f.mu.Unlock()
		return out
	}
	f.mu.Unlock()
	if !ok || d.modRev != row.ModRevision {
		d = decodeFollowed(row, f.opts.Sealer, now)
	} else {
		nd := *d
		nd.warning, nd.warnedAt = certificates.WarningFor(refreshed(nd.certs, now), now), now
		if !sameWarning(nd.warning, d.warning) {
			nd.gen++
		}
		d = &nd
	}
	f.mu.Lock()
	if cur, ok := f.cache[row.Key]; !ok || cur.modRev <= d.modRev {
		f.cache[row.Key] = d
	}
	f.mu.Unlock()
	return *d
}

// decodeFollowed decodes row, reads its certificates and drops its
// secrets. A row that cannot be decoded is kept with the reason, as Load
// keeps it.
func decodeFollowed(row storage.Row, sealer storage.Sealer, now time.Time) *followed {
	rec, err := decodeRecord(row.Value, sealer)
	if rec == nil {
		rec = &record{Name: row.Key}
	}
	d := &followed{modRev: row.ModRevision, decodeErr: err, warnedAt: now}
	if err != nil {
		rec.Reason = fmt.Sprintf("stored record is damaged (%v); delete the cluster and import or create it again", err)
	} else {
		d.certs = parseCertificates(rec, now)
		d.warning = certificates.WarningFor(d.certs, now)
		d.standing = standingOf(rec)
	}
	rec.secrets = secrets{}
	d.rec = rec
	return d
}

// prune drops the decoded rows of clusters that no longer exist once the
// cache has grown well past the rows there are.
func (f *Follower) prune(rows []storage.Row) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cache) <= 2*len(rows)+16 {
		return
	}
	keep := make(map[string]*followed, len(rows))
	for _, r := range rows {
		if d, ok := f.cache[r.Key]; ok {
			keep[r.Key] = d
		}
	}
	f.cache = keep
}
