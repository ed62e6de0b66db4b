package server

import (
	"net/http"
	"time"

	"github.com/zdnscloud/singlecloud/pubsub"
)

// grantsTTL bounds how long one event stream reuses the grants it read:
// a burst of events (every step of every running operation) costs one
// read of the user a second instead of one per event, and a revoked grant
// stops the cluster's events within a second.
const grantsTTL = time.Second

// watchableKinds are the events another user than the admin may receive,
// of the clusters granted to them: what GET /clusters/{name} shows them
// anyway (its state, its last operation's progress and stall, its
// existence). Snapshots and applications, which the API shows the admin
// only, are not among them.
var watchableKinds = map[pubsub.Kind]bool{
	pubsub.ClusterCreated:           true,
	pubsub.ClusterStatusChanged:     true,
	pubsub.ClusterDeleted:           true,
	pubsub.ClusterOperationProgress: true,
	pubsub.ClusterOperationStalled:  true,
}

// eventFilter decides which events one stream's user receives: the admin
// every one; another user the watchable events of the clusters granted to
// them when the event comes, plus the deletion of a cluster granted to
// them during the stream (a delete drops the cluster's grants in its own
// transaction, before the event that announces it). It belongs to the
// stream's goroutine.
type eventFilter struct {
	s       *Server
	r       *http.Request
	admin   bool
	grants  grants
	read    time.Time       // when grants was read
	granted map[string]bool // clusters seen granted during the stream, not since deleted
}

// newEventFilter reads the user's grants once, which also refuses a user
// who no longer exists.
func (s *Server) newEventFilter(r *http.Request) (*eventFilter, error) {
	_, admin := userFrom(r.Context())
	f := &eventFilter{s: s, r: r, admin: admin, granted: map[string]bool{}}
	if admin {
		return f, nil
	}
	if err := f.refresh(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *eventFilter) refresh() error {
	g, err := f.s.grants(f.r)
	if err != nil {
		return err
	}
	f.grants, f.read = g, time.Now()
	for c := range g.clusters {
		f.granted[c] = true
	}
	return nil
}

// allows reports whether ev goes to the stream. A failure to read the
// grants withholds the event.
func (f *eventFilter) allows(ev pubsub.Event) bool {
	if f.admin {
		return true
	}
	if ev.Cluster == "" || !watchableKinds[ev.Kind] {
		return false
	}
	if time.Since(f.read) > grantsTTL {
		if err := f.refresh(); err != nil {
			return false
		}
	}
	if f.grants.allows(ev.Cluster) {
		f.granted[ev.Cluster] = true
		if ev.Kind == pubsub.ClusterDeleted {
			delete(f.granted, ev.Cluster)
		}
		return true
	}
	if ev.Kind == pubsub.ClusterDeleted && f.granted[ev.Cluster] {
		delete(f.granted, ev.Cluster) // a cluster made again under the name is another
		return true
	}
	delete(f.granted, ev.Cluster)
	return false
}
