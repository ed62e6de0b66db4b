package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
)

// clusterCache keeps each cluster's rendered JSON under the view's
// (Revision, Status), so that listing a thousand clusters re-encodes only
// those that changed since the last list.
type clusterCache struct {
	mu sync.Mutex
	m  map[string]cachedCluster

	// full is the admin's whole list as last assembled; build serialises
	// its reassembly. tickets orders the lists of the manager's views
	// that requests take (see adminList).
	full    atomic.Pointer[fullList]
	build   sync.Mutex
	tickets atomic.Uint64
	gzip    *gzipper // compresses the lists, reusing its compressors
	// views are the views last listed for a generation (listed), shared
	// read-only by the pages and filtered lists of that generation.
	views [2]atomic.Pointer[listedViews]
}

// listedViews is one List of a generation.
type listedViews struct {
	gen uint64
	all []clustermanager.Cluster
}

type cachedCluster struct {
	rev     uint64
	status  fsm.State
	created time.Time // a cluster deleted and made again restarts its revisions
	js      [2][]byte // rendered for a non-admin [0] and for the admin [1], each made on first use
}

func newClusterCache() *clusterCache {
	return &clusterCache{m: map[string]cachedCluster{}, gzip: &gzipper{}}
}

// render returns c's resource JSON as the admin (admin) or another user
// sees it, from the cache when c has not changed.
func (cc *clusterCache) render(c clustermanager.Cluster, admin bool) ([]byte, error) {
	v := 0
	if admin {
		v = 1
	}
	cc.mu.Lock()
	hit, ok := cc.m[c.Name]
	cc.mu.Unlock()
	fresh := ok && hit.rev == c.Revision && hit.status == c.Status && hit.created.Equal(c.CreatedAt)
	if fresh && hit.js[v] != nil {
		return hit.js[v], nil
	}
	js, err := json.Marshal(toClusterResource(c, admin))
	if err != nil {
		return nil, fmt.Errorf("encode cluster %s: %w", c.Name, err)
	}
	entry := cachedCluster{rev: c.Revision, status: c.Status, created: c.CreatedAt}
	if fresh {
		entry = hit
	}
	entry.js[v] = js
	cc.mu.Lock()
	cc.m[c.Name] = entry
	cc.mu.Unlock()
	return js, nil
}

// prune drops clusters that no longer exist once the cache has grown well
// past the live set.
func (cc *clusterCache) prune(live []clustermanager.Cluster) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if len(cc.m) <= 2*len(live)+16 {
		return
	}
	keep := make(map[string]cachedCluster, len(live))
	for _, c := range live {
		if v, ok := cc.m[c.Name]; ok {
			keep[c.Name] = v
		}
	}
	cc.m = keep
}

// collectionExtra is what a paged or filtered list adds to the envelope:
// the count of items matching its filters, and the token for the next page.
type collectionExtra struct {
	Continue string `json:"continue,omitempty"`
	Total    *int   `json:"total,omitempty"`
}

// assembleCollection renders singlecloud's collection envelope around
// items that are already JSON; extra adds "continue" and "total".
func assembleCollection(resourceType, self string, items [][]byte, extra *collectionExtra) ([]byte, error) {
	body, _, err := assembleCollectionAt(resourceType, self, items, extra)
	return body, err
}

// assembleCollectionAt is assembleCollection that also returns where each
// item starts in the body, so that the caller can keep sub-slices of it
// instead of the items (see clusterCache.share).
func assembleCollectionAt(resourceType, self string, items [][]byte, extra *collectionExtra) ([]byte, []int, error) {
	size := 192
	for _, it := range items {
		size += len(it) + 1
	}
	var buf bytes.Buffer
	buf.Grow(size)
	head, err := json.Marshal(struct {
		Type         string            `json:"type"`
		ResourceType string            `json:"resourceType"`
		Links        map[string]string `json:"links"`
		*collectionExtra
	}{"collection", resourceType, map[string]string{"self": self}, extra})
	if err != nil {
		return nil, nil, fmt.Errorf("encode collection: %w", err)
	}
	buf.Write(head[:len(head)-1])
	buf.WriteString(`,"data":[`)
	offs := make([]int, len(items))
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		offs[i] = buf.Len()
		buf.Write(it)
	}
	buf.WriteString("]}\n")
	return buf.Bytes(), offs, nil
}

// writeRawCollection answers 200 with singlecloud's collection envelope
// around items that are already JSON.
func writeRawCollection(w http.ResponseWriter, resourceType, self string, items [][]byte) error {
	body, err := assembleCollection(resourceType, self, items, nil)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return err
}

// viewKey identifies one cluster's rendering: the key the per-cluster
// cache checks.
type viewKey struct {
	name    string
	rev     uint64
	status  fsm.State
	created time.Time
}

func (k viewKey) of(c *clustermanager.Cluster) bool {
	return k.name == c.Name && k.rev == c.Revision && k.status == c.Status && k.created.Equal(c.CreatedAt)
}

// fullList is the admin's whole list (GET /clusters without parameters),
// assembled once for the views in keys and served as is until one of
// them changes; its gzipped form is made on the first request for it.
type fullList struct {
	ticket uint64 // taken just before the views were listed
	// gen, once set, is 1 + a generation of the views (generational)
	// that the body is at least as new as.
	gen    atomic.Uint64
	keys   []viewKey
	body   []byte
	gzOnce sync.Once
	gz     []byte
}

// fresh reports whether the list was assembled from exactly the views in
// all (in order): then its body is still the answer. It allocates nothing.
func (f *fullList) fresh(all []clustermanager.Cluster) bool {
	if f == nil || len(f.keys) != len(all) {
		return false
	}
	for i := range all {
		if !f.keys[i].of(&all[i]) {
			return false
		}
	}
	return true
}

// gzipped returns the list compressed by g, compressing it once.
func (f *fullList) gzipped(g *gzipper) []byte {
	f.gzOnce.Do(func() { f.gz = g.bytes(f.body) })
	return f.gz
}

// generational is a ClusterReads that numbers its changes
// (clustermanager.Manager.Generation): the whole list is then served
// without listing the views while the number stays, stable.
type generational interface {
	Generation() (gen uint64, stable bool)
}

// current returns the whole list if it was assembled for generation gen.
func (cc *clusterCache) current(gen uint64) *fullList {
	if f := cc.full.Load(); f != nil && f.gen.Load() == gen+1 {
		return f
	}
	return nil
}

// tag records that f is at least as new as generation gen (read before
// the views f was checked against were listed).
func (f *fullList) tag(gen uint64) {
	for {
		cur := f.gen.Load()
		if cur >= gen+1 || f.gen.CompareAndSwap(cur, gen+1) {
			return
		}
	}
}

// listed returns the views of generation gen (all, or only the ready
// ones), listing them with list only when this generation has none yet:
// a page of 50 out of 10,000 then costs a filter and a sort of pointers,
// not 10,000 views built again. The slice is shared: callers must not
// modify it (listQuery.page sorts pointers of its own).
func (cc *clusterCache) listed(gen uint64, onlyReady bool, list func(bool) []clustermanager.Cluster) []clustermanager.Cluster {
	i := 0
	if onlyReady {
		i = 1
	}
	if v := cc.views[i].Load(); v != nil && v.gen == gen {
		return v.all
	}
	all := list(onlyReady)
	cc.views[i].Store(&listedViews{gen: gen, all: all})
	return all
}

// ticket is taken just before listing the manager's views for adminList.
func (cc *clusterCache) ticket() uint64 { return cc.tickets.Add(1) }

// adminList returns the admin's whole list of all, the views listed
// after ticket was taken. It serves the list last assembled when none of
// them changed since; otherwise it assembles it again, once for
// concurrent requests: a request that waited for another's assembly takes
// that one if its views were listed after its own ticket (they are then
// at least as recent as its own, and still from within its request).
func (cc *clusterCache) adminList(all []clustermanager.Cluster, ticket uint64, resourceType, self string) (*fullList, error) {
	if f := cc.full.Load(); f.fresh(all) {
		return f, nil
	}
	cc.build.Lock()
	defer cc.build.Unlock()
	if f := cc.full.Load(); f.fresh(all) || (f != nil && f.ticket > ticket) {
		return f, nil
	}
	keys := make([]viewKey, len(all))
	items := make([][]byte, len(all))
	for i, c := range all {
		js, err := cc.render(c, true)
		if err != nil {
			return nil, err
		}
		keys[i] = viewKey{name: c.Name, rev: c.Revision, status: c.Status, created: c.CreatedAt}
		items[i] = js
	}
	body, offs, err := assembleCollectionAt(resourceType, self, items, nil)
	if err != nil {
		return nil, err
	}
	cc.share(all, items, body, offs)
	f := &fullList{ticket: ticket, keys: keys, body: body}
	if cur := cc.full.Load(); cur == nil || cur.ticket < ticket {
		cc.full.Store(f)
	}
	return f, nil
}

// share points the admin renderings of all, which are items, at their
// copies in body (at offs), so that the whole list and the per-cluster
// cache hold each cluster's JSON once instead of twice (884 KB at 1,000
// clusters, 88 MB at 100,000). An entry rendered again since items were
// taken is left alone. The sub-slices are capped: nothing can append into
// the body. The previous body is freed once the last list that served it
// and the last entry pointing into it are gone.
func (cc *clusterCache) share(all []clustermanager.Cluster, items [][]byte, body []byte, offs []int) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for i := range all {
		it := items[i]
		e, ok := cc.m[all[i].Name]
		if !ok || len(it) == 0 || len(e.js[1]) != len(it) || &e.js[1][0] != &it[0] {
			continue
		}
		end := offs[i] + len(it)
		e.js[1] = body[offs[i]:end:end]
		cc.m[all[i].Name] = e
	}
}
