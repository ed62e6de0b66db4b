package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
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
}

type cachedCluster struct {
	rev     uint64
	status  fsm.State
	created time.Time // a cluster deleted and made again restarts its revisions
	js      [2][]byte // rendered for a non-admin [0] and for the admin [1], each made on first use
}

func newClusterCache() *clusterCache { return &clusterCache{m: map[string]cachedCluster{}} }

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

// writeRawCollection answers 200 with singlecloud's collection envelope
// around items that are already JSON.
func writeRawCollection(w http.ResponseWriter, resourceType, self string, items [][]byte) error {
	size := 128
	for _, it := range items {
		size += len(it) + 1
	}
	var buf bytes.Buffer
	buf.Grow(size)
	head, err := json.Marshal(struct {
		Type         string            `json:"type"`
		ResourceType string            `json:"resourceType"`
		Links        map[string]string `json:"links"`
	}{"collection", resourceType, map[string]string{"self": self}})
	if err != nil {
		return fmt.Errorf("encode collection: %w", err)
	}
	buf.Write(head[:len(head)-1])
	buf.WriteString(`,"data":[`)
	for i, it := range items {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(it)
	}
	buf.WriteString("]}\n")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(buf.Bytes())
	return err
}
