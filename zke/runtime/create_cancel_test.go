package runtime

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestCreateOutlivesACancel: a cancel during docker create does not cut
// the request (dockerd would finish it unseen); create returns the
// cancel once Docker has answered, so the container exists before the
// caller goes on to clean up.
func TestCreateOutlivesACancel(t *testing.T) {
	f := newFakeDaemon(t)
	var answered atomic.Bool
	entered := make(chan struct{})
	f.mux.HandleFunc("/containers/create", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		time.Sleep(200 * time.Millisecond) // dockerd busy creating
		answered.Store(true)
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"abc"}`))
	})
	c := f.client(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()
	n, err := ContainerSpec{Name: "etcd", Image: "img"}.normalized("c1", RestartUnlessStopped)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.create(ctx, n, "hash", false)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("create after a cancel: %v, want context.Canceled", err)
	}
	if !answered.Load() {
		t.Error("create returned before Docker answered: the container may appear after the caller looked")
	}
}
