package clustermanager

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// followerOf mirrors db and returns a Follower of the mirror and a
// function that syncs the mirror.
func followerOf(t *testing.T, db *storage.Etcd) (*Follower, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m, err := storage.NewMirror(ctx, db, storage.BucketClusters, storage.BucketOperations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	f, err := NewFollower(FollowerOptions{Store: m, Sealer: db.Sealer()})
	if err != nil {
		t.Fatal(err)
	}
	return f, func() {
		t.Helper()
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.Sync(sctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A follower's views of the stored rows are the manager's views of its
// settled clusters: the same status, reason, version, node count, last
// operation, history and kubeconfig; a row that does not decode is listed
// Unavailable with the reason, as Load lists it; a view's Revision moves
// when its row changes; a deleted cluster is gone.
func TestFollowerShowsTheStoredClusters(t *testing.T) {
	srv := etcdtest.Start(t)
	db, err := storage.OpenEtcd(context.Background(), storage.EtcdOptions{Endpoints: []string{srv.Endpoint},
		Prefix: "/follower/", KeyFile: filepath.Join(t.TempDir(), "singlecloud.key")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	h := newHarnessWith(t, db, nil)
	api := newAPIServer(t, "good")
	ctx := context.Background()
	if _, err := h.m.Import(ctx, model.ImportRequest{Name: "good", Kubeconfig: api.kubeconfig()}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("good", fsm.StateRunning, 10*time.Second)
	if _, err := h.m.Import(ctx, model.ImportRequest{Name: "broken", Kubeconfig: kubeconfig(api.srv.URL, api.caPEM(), "wrong")}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("broken", fsm.StateUnavailable, 10*time.Second)
	if err := db.Put(storage.BucketClusters, "damaged", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	f, sync := followerOf(t, db)
	sync()

	for _, name := range []string{"good", "broken"} {
		want, err := h.m.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Get(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Status != want.Status || got.Reason != want.Reason || got.Version != want.Version || got.Kind != want.Kind ||
			got.NodeCount != want.NodeCount || !got.CreatedAt.Equal(want.CreatedAt) ||
			(got.LastOperation == nil) != (want.LastOperation == nil) ||
			(got.LastOperation != nil && got.LastOperation.State != want.LastOperation.State) {
			t.Errorf("%s: follower %+v, manager %+v", name, got, want)
		}
		fromMgr, _ := h.m.Operations(name)
		fromFollower, err := f.Operations(name)
		if err != nil || len(fromFollower) != len(fromMgr) {
			t.Errorf("%s: %d operations from the follower (err %v), %d from the manager", name, len(fromFollower), err, len(fromMgr))
		}
	}
	kc, err := f.Kubeconfig("good")
	if want, _ := h.m.Kubeconfig("good"); err != nil || string(kc) != string(want) {
		t.Errorf("kubeconfig of good from the follower: err %v, equal %v", err, string(kc) == string(want))
	}
	var notReady *NotReadyError
	if _, err := f.Kubeconfig("broken"); !errors.As(err, &notReady) {
		t.Errorf("kubeconfig of an unavailable cluster: %v, want NotReadyError", err)
	}
	damaged, err := f.Get("damaged")
	if err != nil || damaged.Status != fsm.StateUnavailable || !strings.Contains(damaged.Reason, "damaged") {
		t.Errorf("a damaged row: %+v (err %v), want Unavailable saying it is damaged", damaged, err)
	}
	var names []string
	for _, c := range f.List(false) {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "broken,damaged,good" {
		t.Errorf("follower lists %v", names)
	}
	if ready := f.List(true); len(ready) != 1 || ready[0].Name != "good" {
		t.Errorf("ready list %+v, want good only", ready)
	}

	before, _ := f.Get("broken")
	if _, err := h.m.Retry(ctx, "broken"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("broken", fsm.StateUnavailable, 10*time.Second)
	sync()
	after, _ := f.Get("broken")
	if after.Revision == before.Revision {
		t.Errorf("the view's revision stayed %d across a write of its row", after.Revision)
	}
	if _, err := h.m.Delete(ctx, "good", false); err != nil {
		t.Fatal(err)
	}
	h.waitGone("good")
	sync()
	if _, err := f.Get("good"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted cluster from the follower: %v, want ErrNotFound", err)
	}
}
