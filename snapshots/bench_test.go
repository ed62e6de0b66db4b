package snapshots

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// BenchmarkSave saves a snapshot of 1,000 keys: receive, etcd's status,
// seal, fsync.
func BenchmarkSave(b *testing.B) {
	src := takeSnapshot(b, 1000)
	s, _ := newTestStore(b, nil)
	s.chunkSize = chunkSize
	b.SetBytes(int64(len(src.Data)))
	start := time.Now()
	n := 0
	for b.Loop() {
		if _, err := s.Save(context.Background(), Meta{Cluster: "bench"}, bytes.NewReader(src.Data)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(n), "ms/save")
}

// BenchmarkDrill drills a snapshot of 1,000 keys: decrypt, restore, start
// etcd, count, stop.
func BenchmarkDrill(b *testing.B) {
	src := takeSnapshot(b, 1000)
	s, _ := newTestStore(b, nil)
	s.chunkSize = chunkSize
	m := mustSave(b, s, "bench", false, src.Data)
	d := NewDriller(s, 0)
	start := time.Now()
	n := 0
	for b.Loop() {
		if _, err := d.Drill(context.Background(), "bench", m.ID); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(n), "ms/drill")
}
