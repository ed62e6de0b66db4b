package storage

import (
	"fmt"
	"testing"
)

// A mirror bucket keeps its keys sorted through puts in any order,
// overwrites and deletes, and reads a prefix from a start key.
func TestMirrorBucketKeepsKeysSorted(t *testing.T) {
	b := newMirrorBucket()
	for _, k := range []string{"b/2", "a/1", "c", "b/1", "a/1", "b/3", "a"} {
		b.put(Row{Key: k, Value: []byte(k)})
	}
	b.del("c")
	b.del("missing")
	for _, tc := range []struct{ prefix, start, want string }{
		{"", "", "[a a/1 b/1 b/2 b/3]"},
		{"b/", "", "[b/1 b/2 b/3]"},
		{"b/", "b/2", "[b/2 b/3]"},
		{"b/", "b/2\x00", "[b/3]"},
		{"a", "", "[a a/1]"},
		{"c", "", "[]"},
		{"b/", "a", "[b/1 b/2 b/3]"},
	} {
		var got []string
		for _, r := range b.from(tc.prefix, tc.start) {
			got = append(got, r.Key)
		}
		if s := fmt.Sprint(got); s != tc.want && !(len(got) == 0 && tc.want == "[]") {
			t.Errorf("from(%q, %q) = %s, want %s", tc.prefix, tc.start, s, tc.want)
		}
	}
	if len(b.keys) != len(b.rows) {
		t.Errorf("%d keys for %d rows", len(b.keys), len(b.rows))
	}
}
