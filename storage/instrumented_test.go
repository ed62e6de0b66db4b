package storage_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// opLog records what an instrumented store reports.
type opLog struct {
	mu  sync.Mutex
	ops []string
	neg bool
}

func (l *opLog) observe(op string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
	if d < 0 {
		l.neg = true
	}
}

func (l *opLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.ops
	l.ops = nil
	return out
}

// Every call through the decorator reaches the real bbolt store and is
// reported once, with its operation, errors included.
func TestInstrumentReportsEveryCall(t *testing.T) {
	db := storagetest.Open(t)
	log := &opLog{}
	s := storage.Instrument(db, log.observe)
	b := storage.BucketClusters
	boom := errors.New("boom")
	tests := []struct {
		name    string
		call    func() error
		wantOps []string
		wantErr error
	}{
		{"put", func() error { return s.Put(b, "a", []byte("1")) }, []string{storage.OpPut}, nil},
		{"get", func() error {
			v, err := s.Get(b, "a")
			if err == nil && string(v) != "1" {
				return errors.New("get returned " + string(v))
			}
			return err
		}, []string{storage.OpGet}, nil},
		{"get missing", func() error { _, err := s.Get(b, "zz"); return err }, []string{storage.OpGet}, storage.ErrNotFound},
		{"list", func() error {
			kvs, err := s.List(b)
			if err == nil && len(kvs) != 1 {
				return errors.New("list is not one pair")
			}
			return err
		}, []string{storage.OpList}, nil},
		{"list prefix", func() error { _, err := s.ListPrefix(b, "a"); return err }, []string{storage.OpList}, nil},
		{"update", func() error {
			return s.Update(func(tx storage.Tx) error { return tx.Put(b, "b", []byte("2")) })
		}, []string{storage.OpUpdate}, nil},
		{"update failing", func() error {
			return s.Update(func(tx storage.Tx) error { _ = tx.Put(b, "c", []byte("3")); return boom })
		}, []string{storage.OpUpdate}, boom},
		{"view", func() error {
			return s.View(func(r storage.Reader) error {
				if _, err := r.Get(b, "c"); !errors.Is(err, storage.ErrNotFound) {
					return errors.New("a failed update's write was kept")
				}
				return nil
			})
		}, []string{storage.OpView}, nil},
		{"delete", func() error { return s.Delete(b, "a") }, []string{storage.OpDelete}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if got := log.take(); !slices.Equal(got, tt.wantOps) {
				t.Fatalf("reported %q, want %q", got, tt.wantOps)
			}
		})
	}
	// The writes went to the real file: read it without the decorator.
	if v, err := db.Get(b, "b"); err != nil || string(v) != "2" {
		t.Fatalf("bbolt has b = %q, %v", v, err)
	}
	if _, err := db.Get(b, "a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted key a: %v", err)
	}
	if log.neg {
		t.Fatal("a negative duration was reported")
	}
	if s.Sealer() != db.Sealer() || s.Unwrap() != storage.Store(db) {
		t.Fatal("the decorator hides the store's Sealer or the store")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(b, "b"); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("Get after Close = %v, want ErrClosed", err)
	}
}

// A nil observer is allowed and observes nothing.
func TestInstrumentNilObserver(t *testing.T) {
	s := storage.Instrument(storagetest.Open(t), nil)
	if err := s.Put(storage.BucketClusters, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
}
