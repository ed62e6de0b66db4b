package clustermanager

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// TestOnDeleteRunsInTheDeleteTransaction: OnDelete's writes land with the
// removal of the cluster's row, and its failure keeps the row (the cluster
// stays Deleting, the delete resumes later).
func TestOnDeleteRunsInTheDeleteTransaction(t *testing.T) {
	api := newAPIServer(t, "good")
	var fail atomic.Bool
	var called atomic.Int32
	fail.Store(true)
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) {
		o.OnDelete = func(tx storage.Tx, cluster string) error {
			called.Add(1)
			if err := tx.Put(storage.BucketUsers, "grant-of-"+cluster, []byte("dropped")); err != nil {
				return err
			}
			if fail.Load() {
				return errors.New("grants store broken")
			}
			return nil
		}
	})
	for _, name := range []string{"a", "b"} {
		if _, err := h.m.Import(context.Background(), model.ImportRequest{Name: name, Kubeconfig: api.kubeconfig()}); err != nil {
			t.Fatal(err)
		}
		h.waitStatus(name, fsm.StateRunning, 10*time.Second)
	}

	if _, err := h.m.Delete(context.Background(), "a", false); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("a", fsm.StateDeleting, 5*time.Second)
	// The failed removal publishes nothing: wait for the delete's run to
	// end on the cluster's worker.
	h.settle("a")
	if called.Load() == 0 {
		t.Fatal("OnDelete was not called by the delete of a")
	}
	if c, err := h.m.Get("a"); err != nil || c.Status != fsm.StateDeleting {
		t.Fatalf("a after its removal failed: %s (err %v), want it still Deleting", c.Status, err)
	}
	if _, err := h.store.Get(storage.BucketClusters, "a"); err != nil {
		t.Fatalf("row of a gone although OnDelete failed: %v", err)
	}
	if _, err := h.store.Get(storage.BucketUsers, "grant-of-a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("OnDelete's write kept although its transaction failed (err %v)", err)
	}

	fail.Store(false)
	if _, err := h.m.Delete(context.Background(), "b", false); err != nil {
		t.Fatal(err)
	}
	h.waitGone("b")
	if _, err := h.store.Get(storage.BucketClusters, "b"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("row of b still stored after its delete (err %v)", err)
	}
	if v, err := h.store.Get(storage.BucketUsers, "grant-of-b"); err != nil || string(v) != "dropped" {
		t.Fatalf("OnDelete's write = %q, %v; want it committed with the delete", v, err)
	}
}
