package clustermanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	m, err := storage.NewMirror(ctx, db, storage.BucketClusters, storage.BucketOperations, storage.BucketOperationLogs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	f, err := NewFollower(FollowerOptions{Store: m, Sealer: db.Sealer(), Changed: m.Changed})
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
	db := openEtcd(t)
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
			got.NodeCount != want.NodeCount || !got.CreatedAt.Equal(want.CreatedAt) || got.Actions != want.Actions || !got.Actions.Has(ActionDelete) ||
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

// openEtcd opens a store on an etcd of the test's own.
func openEtcd(t *testing.T) *storage.Etcd {
	t.Helper()
	srv := etcdtest.Start(t)
	db, err := storage.OpenEtcd(context.Background(), storage.EtcdOptions{Endpoints: []string{srv.Endpoint},
		Prefix: "/follower/", KeyFile: filepath.Join(t.TempDir(), "singlecloud.key")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// A follower streams an operation's log from the stored frames: those
// after since (all of them for a since past the last, which followed an
// earlier operation), then each frame as it is stored, ending after the
// result frame, which may be stored after the operation's end; a finished
// operation's log comes without a channel.
func TestFollowerFollowsTheStoredLog(t *testing.T) {
	db := openEtcd(t)
	put := func(rec *record) {
		t.Helper()
		b, err := encodeRecord(rec, db.Sealer())
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Put(storage.BucketClusters, rec.Name, b); err != nil {
			t.Fatal(err)
		}
	}
	frame := func(seq uint64, typ string) {
		t.Helper()
		b, _ := json.Marshal(Frame{Seq: seq, Type: typ, Message: fmt.Sprint("frame ", seq)})
		if err := db.Put(storage.BucketOperationLogs, oplogKey("x", seq), b); err != nil {
			t.Fatal(err)
		}
	}
	running := &record{Name: "x", Kind: KindCreated, Status: fsm.StateCreating, CreatedAt: time.Now(),
		LastOperation: &Operation{Type: OpCreate, State: OpRunning, StartedAt: time.Now()}}
	put(running)
	for seq := uint64(1); seq <= 3; seq++ {
		frame(seq, FrameLog)
	}
	f, sync := followerOf(t, db)
	sync()
	for _, tc := range []struct {
		since uint64
		want  []uint64
	}{{0, []uint64{1, 2, 3}}, {2, []uint64{3}}, {3, nil}, {99, []uint64{1, 2, 3}}} {
		frames, _, stop, err := f.FollowLog("x", tc.since)
		if err != nil {
			t.Fatal(err)
		}
		stop()
		var got []uint64
		for _, fr := range frames {
			got = append(got, fr.Seq)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("since %d: frames %v, want %v", tc.since, got, tc.want)
		}
	}

	frames, live, stop, err := f.FollowLog("x", 0)
	if err != nil || live == nil || len(frames) != 3 {
		t.Fatalf("following a running operation: %d frames, live %v, err %v", len(frames), live != nil, err)
	}
	defer stop()
	ended := running.clone()
	ended.Status, ended.LastOperation.State = fsm.StateRunning, OpSucceeded
	for _, want := range []uint64{4, 5} {
		if want == 4 {
			frame(4, FrameProgress)
		} else {
			// The leader saves the operation's end before it flushes
			// the result frame.
			put(ended)
			sync()
			frame(5, FrameResult)
		}
		select {
		case fr := <-live:
			if fr.Seq != want {
				t.Fatalf("live frame %d, want %d", fr.Seq, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("frame %d not followed within 20 s", want)
		}
	}
	select {
	case fr, ok := <-live:
		if ok {
			t.Fatalf("a frame after the result: %+v", fr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the live channel stayed open after the result frame")
	}

	if frames, live, _, err := f.FollowLog("x", 0); err != nil || live != nil || len(frames) != 5 {
		t.Errorf("a finished operation's log: %d frames, live %v, err %v; want 5 and no channel", len(frames), live != nil, err)
	}
	if _, _, _, err := f.FollowLog("missing", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("the log of a missing cluster: %v", err)
	}
}
