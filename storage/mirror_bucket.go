package storage

import (
	"slices"
	"sort"
	"strings"
)

// mirrorBucket is one bucket of a Mirror: its rows by key and its keys in
// order, kept sorted as rows come and go, so that a read of a prefix is a
// binary search and never a sort of the whole bucket.
type mirrorBucket struct {
	rows map[string]Row
	keys []string
}

func newMirrorBucket() *mirrorBucket { return &mirrorBucket{rows: map[string]Row{}} }

// put sets r; a load appends rows in key order, which costs no search.
func (b *mirrorBucket) put(r Row) {
	if _, ok := b.rows[r.Key]; !ok {
		if n := len(b.keys); n == 0 || b.keys[n-1] < r.Key {
			b.keys = append(b.keys, r.Key)
		} else {
			i := sort.SearchStrings(b.keys, r.Key)
			b.keys = slices.Insert(b.keys, i, r.Key)
		}
	}
	b.rows[r.Key] = r
}

// del removes key, if present.
func (b *mirrorBucket) del(key string) {
	if _, ok := b.rows[key]; !ok {
		return
	}
	delete(b.rows, key)
	if i := sort.SearchStrings(b.keys, key); i < len(b.keys) && b.keys[i] == key {
		b.keys = slices.Delete(b.keys, i, i+1)
	}
}

// from returns the rows whose key starts with prefix and is at least
// start, in key order.
func (b *mirrorBucket) from(prefix, start string) []Row {
	var out []Row
	for i := sort.SearchStrings(b.keys, max(prefix, start)); i < len(b.keys) && strings.HasPrefix(b.keys[i], prefix); i++ {
		out = append(out, b.rows[b.keys[i]])
	}
	return out
}
