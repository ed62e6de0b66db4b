package storage_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// writesPerRound is how many writes each round of BenchmarkWriteLatency
// times: enough for a p99 that is not just the slowest of a handful.
const writesPerRound = 500

// BenchmarkWriteLatency times the write singlecloud makes most: an Update
// that reads a record and writes it back with a ~1 KB value, one at a
// time, on bbolt (fsync per commit), on etcd (one quorum commit of a
// one-member etcd on the same machine) and on etcd through a fenced view
// (the leader's store: the same commit with one more comparison). It
// reports the p50 and p99 of one write.
func BenchmarkWriteLatency(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) storage.Store
	}{
		{"bolt", func(b *testing.B) storage.Store { return storagetest.Open(b) }},
		{"etcd", func(b *testing.B) storage.Store { return etcdtest.Open(b, storage.EtcdOptions{}) }},
		{"etcd-fenced", func(b *testing.B) storage.Store {
			db := etcdtest.Open(b, storage.EtcdOptions{})
			f, _ := elect(b, db)
			fenced, err := db.Fenced(f)
			if err != nil {
				b.Fatal(err)
			}
			return fenced
		}},
	}
	value := make([]byte, 1024)
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			db := s.open(b)
			var took []time.Duration
			for range b.N {
				for i := range writesPerRound {
					key := fmt.Sprintf("c%03d", i%100)
					start := time.Now()
					err := db.Update(func(tx storage.Tx) error {
						if _, err := tx.Get(storage.BucketClusters, key); err != nil && !errors.Is(err, storage.ErrNotFound) {
							return err
						}
						return tx.Put(storage.BucketClusters, key, value)
					})
					took = append(took, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
