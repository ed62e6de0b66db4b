package snapshots

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/snapshots/snapshottest"
	"github.com/zdnscloud/singlecloud/storage"
)

// source is a snapshot taken from a real etcd, with what was written to it.
type source = snapshottest.Source

// takeSnapshot takes a snapshot of keys keys from a real embedded etcd.
func takeSnapshot(tb testing.TB, keys int) source { return snapshottest.Take(tb, keys) }

// fixture is a 100-key snapshot shared by the tests: starting etcd for
// each of them would be slow.
var fixture = struct {
	once sync.Once
	src  source
	ok   bool
}{}

func snapshot100(t *testing.T) source {
	t.Helper()
	fixture.once.Do(func() {
		fixture.src = takeSnapshot(t, 100)
		fixture.ok = true
	})
	if !fixture.ok {
		t.Fatal("taking the shared snapshot failed in an earlier test")
	}
	return fixture.src
}

// testClock returns a clock that advances one minute at each call, so
// snapshots saved one after the other have distinct, ordered times.
func testClock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2026, 11, 25, 14, 1, 2, 0, time.UTC)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Minute) }
}

// newTestStore opens a store in a new directory with a new key. Chunks are
// 8 KiB so that small snapshots have many of them.
func newTestStore(t testing.TB, clock func() time.Time) (*Store, string) {
	t.Helper()
	sealer, err := storage.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	s, err := Open(dir, sealer, clock)
	if err != nil {
		t.Fatal(err)
	}
	s.chunkSize = 8 << 10
	return s, dir
}

// mustSave saves src as a snapshot of cluster.
func mustSave(t testing.TB, s *Store, cluster string, pinned bool, data []byte) Meta {
	t.Helper()
	m, err := s.Save(context.Background(), Meta{Cluster: cluster, Trigger: "manual", Pinned: pinned, Member: "node1"},
		bytes.NewReader(data))
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	return m
}
