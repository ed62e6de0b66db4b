package snapshots

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestOpenCleansCrashLeftovers(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	kept := mustSave(t, s, "a", false, src.Data)
	orphan := mustSave(t, s, "a", false, src.Data)
	if err := os.Remove(filepath.Join(dir, "a", orphan.ID+".json")); err != nil {
		t.Fatal(err)
	}
	// A drill's directory, marked as a drill marks it before it writes.
	drill := filepath.Join(dir, ".scratch", "drill-456")
	if err := os.Mkdir(drill, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := createMark(drill, s.sealer, roleDrill); err != nil {
		t.Fatal(err)
	}
	leftovers := []string{
		".scratch/save-123.db",
		".scratch/drill-456/data/member/snap/db",
		"a/." + kept.ID + ".snap.tmp-789",
		"a/." + kept.ID + ".json.tmp-1",
	}
	for _, name := range leftovers {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src.Secret), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	again, err := Open(dir, s.sealer, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".", ownerFile, ".scratch", ".scratch/" + markFile, "a", "a/" + markFile,
		"a/" + kept.ID + ".json", "a/" + kept.ID + ".snap"}
	if tree := listTree(t, dir); !slices.Equal(tree, want) {
		t.Errorf("after open the store holds %v, want %v", tree, want)
	}
	if k := again.Kept(); len(k) != 0 {
		t.Errorf("Kept() = %v, want nothing: every leftover was the store's", k)
	}
	if info, err := os.Stat(filepath.Join(dir, ".scratch")); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("scratch directory: %v, %v; want mode 0700", info, err)
	}
}

func TestVerifyingAfterCrashReadsUnverified(t *testing.T) {
	src := snapshot100(t)
	s, dir := newTestStore(t, testClock())
	m := mustSave(t, s, "a", false, src.Data)
	if _, err := s.MarkVerifying("a", m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkVerifying("a", m.ID); !errors.Is(err, ErrBusy) {
		t.Errorf("second MarkVerifying = %v, want ErrBusy", err)
	}
	if g, _ := s.Get("a", m.ID); g.Verification != Verifying {
		t.Errorf("while drilling the record says %q, want %q", g.Verification, Verifying)
	}
	restarted, err := Open(dir, s.sealer, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := restarted.Get("a", m.ID)
	if err != nil || g.Verification != Unverified {
		t.Errorf("after a restart the record says %q (%v), want %q", g.Verification, err, Unverified)
	}
	l, _ := restarted.List("a")
	if len(l) != 1 || l[0].Verification != Unverified {
		t.Errorf("after a restart the list says %+v, want unverified", l)
	}
}

func TestSetVerification(t *testing.T) {
	src := snapshot100(t)
	s, _ := newTestStore(t, testClock())
	m := mustSave(t, s, "a", false, src.Data)
	ok, err := s.SetVerification("a", m.ID, DrillResult{Duration: 1500 * time.Millisecond}, nil)
	if err != nil || ok.Verification != Verified || ok.VerifiedAt == nil || ok.DrillSeconds != 1.5 {
		t.Fatalf("verified = %+v, %v", ok, err)
	}
	if _, err := s.MarkVerifying("a", m.ID); err != nil {
		t.Fatal(err)
	}
	back, err := s.CancelVerifying("a", m.ID)
	if err != nil || back.Verification != Verified || back.VerifiedAt == nil {
		t.Errorf("after a cancelled drill = %+v, %v; want the earlier verified state", back, err)
	}
	failed, err := s.SetVerification("a", m.ID, DrillResult{}, errors.New("boom"))
	if err != nil || failed.Verification != Failed || failed.VerifyError != "boom" || failed.VerifiedAt != nil {
		t.Errorf("failed = %+v, %v", failed, err)
	}
	if g, _ := s.Get("a", m.ID); g.Verification != Failed || g.VerifyError != "boom" {
		t.Errorf("record not written: %+v", g)
	}
}
