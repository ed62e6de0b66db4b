package snapshots

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func readAll(t *testing.T, s *Store, cluster, id string) ([]byte, error) {
	t.Helper()
	rc, _, err := s.Open(cluster, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func TestSaveOpenRoundTrip(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	in := Meta{Cluster: "prod", Trigger: "before update", Pinned: true, Member: "master-1", TakenBy: "admin"}
	m, err := s.Save(context.Background(), in, bytes.NewReader(src.Data))
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	sum := sha256.Sum256(src.Data)
	if m.KeyCount != 100 || m.Revision != src.Revision {
		t.Errorf("keys %d revision %d, want 100 and %d", m.KeyCount, m.Revision, src.Revision)
	}
	if m.Size != int64(len(src.Data)) || m.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("size %d sha256 %s, want %d %x", m.Size, m.SHA256, len(src.Data), sum)
	}
	if m.Cluster != "prod" || m.Trigger != "before update" || !m.Pinned || m.Member != "master-1" || m.TakenBy != "admin" {
		t.Errorf("caller's fields not kept: %+v", m)
	}
	if m.Name != "prod-"+m.ID || validateID(m.ID) != nil || !strings.HasPrefix(m.ID, "20261125-1402") {
		t.Errorf("id %q name %q: want an id of the clock's time and name prod-<id>", m.ID, m.Name)
	}
	// StorageVersion is not checked: etcd writes it into its backend some
	// seconds after starting, so a snapshot of a fresh etcd may lack it.
	if m.Verification != Unverified {
		t.Errorf("verification %q, want unverified", m.Verification)
	}

	sealed, err := os.ReadFile(filepath.Join(dir, "prod", m.ID+".snap"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(src.Secret)) || bytes.Contains(sealed, []byte("/registry/secrets")) {
		t.Error("the sealed file holds plaintext of the snapshot")
	}
	if _, frames := splitFrames(t, sealed); len(frames) < 3 {
		t.Errorf("%d frames: the tamper tests need a snapshot of several chunks", len(frames))
	}
	for _, name := range []string{"prod", "prod/" + m.ID + ".snap", "prod/" + m.ID + ".json"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", name, info.Mode().Perm())
		}
	}

	got, err := readAll(t, s, "prod", m.ID)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if sha256.Sum256(got) != sum {
		t.Fatal("the decrypted snapshot differs from the one saved")
	}
	g, err := s.Get("prod", m.ID)
	if err != nil || g.SHA256 != m.SHA256 || !g.CreatedAt.Equal(m.CreatedAt) {
		t.Errorf("get = %+v, %v; want the saved record", g, err)
	}
	if scratch, _ := os.ReadDir(filepath.Join(dir, ".scratch")); len(scratch) != 1 || scratch[0].Name() != markFile {
		t.Errorf("scratch directory not cleaned: %v (want only its mark)", scratch)
	}
}

func TestListDeleteGet(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	if l, err := s.List("none"); err != nil || l == nil || len(l) != 0 {
		t.Errorf("list of an unknown cluster = %v, %v; want an empty list", l, err)
	}
	a := mustSave(t, s, "a", false, src.Data)
	b := mustSave(t, s, "a", false, src.Data)
	other := mustSave(t, s, "b", false, src.Data)
	l, err := s.List("a")
	if err != nil {
		t.Fatal(err)
	}
	if ids := ids(l); !slices.Equal(ids, []string{b.ID, a.ID}) {
		t.Errorf("list = %v, want newest first %v", ids, []string{b.ID, a.ID})
	}
	if err := s.Delete("a", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("a", a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("get after delete = %v, want ErrNotFound", err)
	}
	if _, _, err := s.Open("a", a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("open after delete = %v, want ErrNotFound", err)
	}
	if err := s.Delete("a", a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete = %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", a.ID+".snap")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sealed file still there after delete: %v", err)
	}
	if err := s.DeleteCluster("a"); err != nil {
		t.Fatal(err)
	}
	if l, err := s.List("a"); err != nil || len(l) != 0 {
		t.Errorf("list after delete cluster = %v, %v; want empty", l, err)
	}
	if _, err := s.Get("b", other.ID); err != nil {
		t.Errorf("deleting cluster a removed a snapshot of b: %v", err)
	}
	if err := s.DeleteCluster("never"); err != nil {
		t.Errorf("delete of a cluster without snapshots = %v, want nil", err)
	}
}

func ids(ms []Meta) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestInvalidNames(t *testing.T) {
	s, _ := newTestStore(t, testClock())
	const goodID = "20261125-140102-3f9a"
	d := NewDriller(s, time.Second)
	ctx := context.Background()
	calls := map[string]func(cluster, id string) error{
		"Save":    func(c, _ string) error { _, err := s.Save(ctx, Meta{Cluster: c}, strings.NewReader("x")); return err },
		"List":    func(c, _ string) error { _, err := s.List(c); return err },
		"Get":     func(c, id string) error { _, err := s.Get(c, id); return err },
		"Open":    func(c, id string) error { _, _, err := s.Open(c, id); return err },
		"Delete":  func(c, id string) error { return s.Delete(c, id) },
		"Prune":   func(c, _ string) error { _, err := s.Prune(c, 1); return err },
		"Drill":   func(c, id string) error { _, err := d.Drill(ctx, c, id); return err },
		"Cluster": func(c, _ string) error { return s.DeleteCluster(c) },
		"MarkVerifying": func(c, id string) error {
			_, err := s.MarkVerifying(c, id)
			return err
		},
		"SetVerification": func(c, id string) error {
			_, err := s.SetVerification(c, id, DrillResult{}, nil)
			return err
		},
	}
	idCalls := []string{"Get", "Open", "Delete", "Drill", "MarkVerifying", "SetVerification"}
	for name, call := range calls {
		for _, bad := range []string{"../x", "A", "", "a/b", ".scratch"} {
			if err := call(bad, goodID); !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), "cluster") {
				t.Errorf("%s(cluster %q) = %v, want ErrInvalidID naming the cluster", name, bad, err)
			}
			if !slices.Contains(idCalls, name) {
				continue
			}
			if err := call("a", bad); !errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), "snapshot id") {
				t.Errorf("%s(id %q) = %v, want ErrInvalidID naming the snapshot id", name, bad, err)
			}
		}
	}
}

func TestPrune(t *testing.T) {
	src := snapshot100(t)
	// Six snapshots, oldest first; the first and the fourth are pinned.
	pinned := []bool{true, false, false, true, false, false}
	tests := []struct {
		keep    int
		removed []int // indexes, newest first
	}{
		{keep: 0, removed: []int{5, 4, 2, 1}},
		{keep: 1, removed: []int{4, 2, 1}},
		{keep: 3, removed: []int{1}},
		{keep: 4, removed: []int{}},
		{keep: 10, removed: []int{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("keep %d", tt.keep), func(t *testing.T) {
			s, _ := newTestStore(t, testClock())
			var saved []Meta
			for _, p := range pinned {
				saved = append(saved, mustSave(t, s, "a", p, src.Data))
			}
			removed, err := s.Prune("a", tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{}
			for _, i := range tt.removed {
				want = append(want, saved[i].ID)
			}
			if got := ids(removed); !slices.Equal(got, want) {
				t.Errorf("removed %v, want %v", got, want)
			}
			left, err := s.List("a")
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != len(saved)-len(want) {
				t.Errorf("left %d snapshots, want %d", len(left), len(saved)-len(want))
			}
			for _, m := range left {
				if slices.Contains(want, m.ID) {
					t.Errorf("removed snapshot %s still listed", m.ID)
				}
			}
			for _, i := range []int{0, 3} {
				if _, err := s.Get("a", saved[i].ID); err != nil {
					t.Errorf("pinned snapshot %s: %v", saved[i].ID, err)
				}
			}
		})
	}
	s, _ := newTestStore(t, testClock())
	if _, err := s.Prune("a", -1); err == nil {
		t.Error("prune with keep -1 = nil, want an error")
	}
}

func TestConcurrentSaves(t *testing.T) {
	src := snapshot100(t)
	// One instant for all: the ids differ only by their random part.
	at := time.Date(2026, 11, 25, 14, 1, 2, 0, time.UTC)
	s, _ := newTestStore(t, func() time.Time { return at })
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for range n {
		wg.Go(func() {
			_, err := s.Save(context.Background(), Meta{Cluster: "a"}, bytes.NewReader(src.Data))
			errs <- err
			_, err = s.List("a")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.List("a")
	if err != nil || len(l) != n {
		t.Fatalf("list = %d snapshots, %v; want %d", len(l), err, n)
	}
	for _, m := range l {
		if _, err := readAll(t, s, "a", m.ID); err != nil {
			t.Errorf("snapshot %s: %v", m.ID, err)
		}
	}
}
