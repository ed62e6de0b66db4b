package clustermanager

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// storeImported writes n imported clusters straight into the store, as a
// previous run of singlecloud would have left them.
func storeImported(tb testing.TB, store *storage.Bolt, n int, kubeconfigFor func(i int) string) {
	tb.Helper()
	now := time.Now().UTC()
	err := store.Update(func(tx storage.Tx) error {
		for i := 0; i < n; i++ {
			r := &record{Name: fmt.Sprintf("c%05d", i), Kind: KindImported, Status: fsm.StateRunning, CreatedAt: now, UpdatedAt: now,
				secrets: secrets{Kubeconfig: []byte(kubeconfigFor(i))}}
			b, err := encodeRecord(r, store.Sealer())
			if err != nil {
				return err
			}
			if err := tx.Put(storage.BucketClusters, r.Name, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkHealthSweep1000 measures one health sweep over 1,000 Running
// clusters whose API servers are real HTTPS endpoints on loopback (target:
// well under 10 s).
func BenchmarkHealthSweep1000(b *testing.B) {
	const clusters, servers = 1000, 10
	apis := make([]*apiServer, servers)
	for i := range apis {
		apis[i] = newAPIServer(b, "good")
	}
	store := storagetest.Open(b)
	storeImported(b, store, clusters, func(i int) string { return apis[i%servers].kubeconfig() })
	bus := newBenchBus(b)
	opts := fastOptions(store, bus)
	opts.HealthInterval = time.Hour // only the benchmark sweeps
	m, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	awaitBus(b, bus, 2*time.Minute, fmt.Sprintf("%d clusters ready", clusters), func() bool {
		return len(m.readyEntries()) >= clusters
	})
	var hits int64
	for _, a := range apis {
		hits -= a.hits.Load()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.sweep(ctx, true)
	}
	b.StopTimer()
	for _, a := range apis {
		hits += a.hits.Load()
	}
	if hits < int64(clusters*b.N) {
		b.Fatalf("%d probes reached the servers, want at least %d", hits, clusters*b.N)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/sweep")
}

func newBenchBus(tb testing.TB) *pubsub.Bus {
	bus := pubsub.New(pubsub.Options{})
	tb.Cleanup(bus.Close)
	return bus
}
