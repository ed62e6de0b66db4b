package snapshots

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rewrite replaces a file's contents through f.
func rewrite(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// editMeta changes the record at path through f.
func editMeta(t *testing.T, path string, f func(*Meta)) {
	t.Helper()
	rewrite(t, path, func(data []byte) []byte {
		var m Meta
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		f(&m)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
}

func TestOpenDetectsTampering(t *testing.T) {
	src := snapshot100(t)
	tests := []struct {
		name string
		// tamper changes the store so that snapshot a/<id> is no longer
		// what was saved; it returns the cluster and id to open.
		tamper func(t *testing.T, dir string, a, b Meta) (string, string)
	}{
		{"flipped byte", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			rewrite(t, filepath.Join(dir, "a", a.ID+".snap"), func(d []byte) []byte { d[len(d)/2] ^= 0x80; return d })
			return "a", a.ID
		}},
		{"last frame truncated", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			rewrite(t, filepath.Join(dir, "a", a.ID+".snap"), func(d []byte) []byte {
				h, frames := splitFrames(t, d)
				return join(h, frames[:len(frames)-1]...)
			})
			return "a", a.ID
		}},
		{"cut in the middle of a frame", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			rewrite(t, filepath.Join(dir, "a", a.ID+".snap"), func(d []byte) []byte { return d[:len(d)-100] })
			return "a", a.ID
		}},
		{"chunks swapped between two files", func(t *testing.T, dir string, a, b Meta) (string, string) {
			pa, pb := filepath.Join(dir, "a", a.ID+".snap"), filepath.Join(dir, "a", b.ID+".snap")
			da, _ := os.ReadFile(pa)
			db, _ := os.ReadFile(pb)
			ha, fa := splitFrames(t, da)
			hb, fb := splitFrames(t, db)
			fa[1], fb[1] = fb[1], fa[1]
			rewrite(t, pa, func([]byte) []byte { return join(ha, fa...) })
			rewrite(t, pb, func([]byte) []byte { return join(hb, fb...) })
			return "a", b.ID
		}},
		{"chunks reordered", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			rewrite(t, filepath.Join(dir, "a", a.ID+".snap"), func(d []byte) []byte {
				h, f := splitFrames(t, d)
				f[0], f[1] = f[1], f[0]
				return join(h, f...)
			})
			return "a", a.ID
		}},
		{"another snapshot's file under its name", func(t *testing.T, dir string, a, b Meta) (string, string) {
			other, _ := os.ReadFile(filepath.Join(dir, "a", b.ID+".snap"))
			rewrite(t, filepath.Join(dir, "a", a.ID+".snap"), func([]byte) []byte { return other })
			return "a", a.ID
		}},
		{"moved into another cluster", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			moveSnapshot(t, dir, "a", "b", a.ID)
			return "b", a.ID
		}},
		{"moved into another cluster, record rewritten", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			moveSnapshot(t, dir, "a", "b", a.ID)
			editMeta(t, filepath.Join(dir, "b", a.ID+".json"), func(m *Meta) { m.Cluster, m.Name = "b", "b-"+a.ID })
			return "b", a.ID
		}},
		{"record's sha256 altered", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			editMeta(t, filepath.Join(dir, "a", a.ID+".json"), func(m *Meta) { m.SHA256 = strings.Repeat("0", 64) })
			return "a", a.ID
		}},
		{"record's size altered", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			editMeta(t, filepath.Join(dir, "a", a.ID+".json"), func(m *Meta) { m.Size-- })
			return "a", a.ID
		}},
		{"record not JSON", func(t *testing.T, dir string, a, _ Meta) (string, string) {
			rewrite(t, filepath.Join(dir, "a", a.ID+".json"), func([]byte) []byte { return []byte("{") })
			return "a", a.ID
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newTestStore(t, testClock())
			a := mustSave(t, s, "a", false, src.Data)
			b := mustSave(t, s, "a", false, src.Data)
			cluster, id := tt.tamper(t, dir, a, b)
			got, err := readAll(t, s, cluster, id)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open %s/%s = %d bytes, %v; want an error wrapping ErrCorrupt", cluster, id, len(got), err)
			}
		})
	}
}

// moveSnapshot moves a snapshot's files from one cluster's directory to
// another's, as someone with write access to the store could.
func moveSnapshot(t *testing.T, dir, from, to, id string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, to), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".snap", ".json"} {
		if err := os.Rename(filepath.Join(dir, from, id+ext), filepath.Join(dir, to, id+ext)); err != nil {
			t.Fatal(err)
		}
	}
}

// listTree lists every file and directory under dir, relative to it.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSaveRefusesBadSnapshots(t *testing.T) {
	src := snapshot100(t)
	pageOfGarbage := random(t, 4096)
	garbageSum := sha256.Sum256(pageOfGarbage)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"text", []byte("hello, this is not etcd")},
		{"random", random(t, 64<<10)},
		{"random with a valid integrity hash", append(pageOfGarbage, garbageSum[:]...)},
		{"truncated", src.Data[:len(src.Data)-1000]},
		{"altered", func() []byte { d := bytes.Clone(src.Data); d[len(d)/2] ^= 1; return d }()},
		{"without integrity hash", src.Data[:len(src.Data)-sha256.Size]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := newTestStore(t, testClock())
			_, err := s.Save(context.Background(), Meta{Cluster: "a"}, bytes.NewReader(tt.data))
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("save = %v, want an error wrapping ErrBadSnapshot", err)
			}
			if tree := listTree(t, dir); !slices.Equal(tree, []string{".", ownerFile, ".scratch", ".scratch/" + markFile}) {
				t.Errorf("store holds %v after a refused save, want only the empty scratch directory", tree)
			}
		})
	}
}

func TestSaveCancelled(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Save(ctx, Meta{Cluster: "a"}, bytes.NewReader(src.Data)); !errors.Is(err, context.Canceled) {
		t.Fatalf("save with a cancelled context = %v, want context.Canceled", err)
	}
	if tree := listTree(t, dir); !slices.Equal(tree, []string{".", ownerFile, ".scratch", ".scratch/" + markFile}) {
		t.Errorf("store holds %v after a cancelled save", tree)
	}
}
