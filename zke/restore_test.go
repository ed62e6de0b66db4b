package zke

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

func TestRestoreJobSpec(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	p := &RestoreProgress{Snapshot: "20261125-140536-2ad0", Token: "zke-c1-restore-1"}
	n := r.nodes[1]
	spec := r.restoreJobSpec(n, p, "n1=https://10.0.0.1:2380,n2=https://10.0.0.2:2380")
	want := []string{
		"snapshot", "restore", "/restore/snapshot.db", "--name=n2",
		"--initial-cluster=n1=https://10.0.0.1:2380,n2=https://10.0.0.2:2380",
		"--initial-cluster-token=zke-c1-restore-1",
		"--initial-advertise-peer-urls=https://10.0.0.2:2380",
		"--data-dir=/restore/data",
	}
	if !slices.Equal(spec.Cmd, want) || !slices.Equal(spec.Entrypoint, []string{"etcdutl"}) {
		t.Errorf("job command %v %v, want etcdutl %v", spec.Entrypoint, spec.Cmd, want)
	}
	if spec.Image != r.images[model.ImageEtcd] || spec.NetworkMode != "none" || !slices.Equal(spec.Binds, []string{"/var/lib/etcd-restore:/restore"}) {
		t.Errorf("job spec %+v: want the etcd image, no network, only the restore directory", spec)
	}
}

func TestSwapRestoredScript(t *testing.T) {
	n := etcdNode("n1", "10.0.0.1")
	n.PrefixPath = "/opt/it's"
	got := swapRestoredScript(n, &RestoreProgress{Snapshot: "s", Token: "tok2", Aside: "tok1"})
	for _, want := range []string{
		"set -e",
		`m='/opt/it'\''s/var/lib/etcd/member'`,
		`b='/opt/it'\''s/var/lib/etcd-restore/before-restore-tok1'`,
		`if [ -e "$b" ]; then rm -rf "$m"; elif [ -d "$m" ]; then mv "$m" "$b"; fi`,
		`mv "$d/member" "$m"`,
		`touch '/opt/it'\''s/var/lib/etcd-restore/tok2.done'`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
	// The marker is written last: a swap interrupted before it is redone.
	if lines := strings.Split(got, "\n"); !strings.HasPrefix(lines[len(lines)-1], "touch ") {
		t.Errorf("the marker is not the script's last act:\n%s", got)
	}
}

// TestSwapKeepsTheOriginalData runs the swap script with /bin/sh on a
// directory tree: an interrupted attempt, a second attempt, and a restore
// of another snapshot never lose the data first set aside.
func TestSwapKeepsTheOriginalData(t *testing.T) {
	root := t.TempDir()
	n := etcdNode("n1", "10.0.0.1")
	n.PrefixPath = root
	member := filepath.Join(root, "var/lib/etcd/member")
	restoreDir := filepath.Join(root, "var/lib/etcd-restore")
	write := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return "missing"
		}
		return string(b)
	}
	swap := func(p *RestoreProgress, restored string) {
		t.Helper()
		write(filepath.Join(restoreDir, "data/member/db"), restored)
		if out, err := exec.Command("sh", "-c", swapRestoredScript(n, p)).CombinedOutput(); err != nil {
			t.Fatalf("swap: %v: %s", err, out)
		}
	}
	write(filepath.Join(member, "db"), "original")
	first := &RestoreProgress{Snapshot: "s1", Token: "t1", Aside: "t1"}
	swap(first, "restored-1")
	// The same restore again (its marker lost in a crash): the original
	// stays aside, the member gets the new copy.
	swap(first, "restored-1-again")
	// A restore of another snapshot while the first is unfinished.
	second := &RestoreProgress{Snapshot: "s2", Token: "t2", Aside: "t1"}
	swap(second, "restored-2")
	if got := read(filepath.Join(restoreDir, "before-restore-t1/db")); got != "original" {
		t.Errorf("aside holds %q, want the original data", got)
	}
	if got := read(filepath.Join(member, "db")); got != "restored-2" {
		t.Errorf("member holds %q", got)
	}
	if read(filepath.Join(restoreDir, "t2.done")) == "missing" || read(filepath.Join(restoreDir, "t1.done")) != "missing" {
		t.Error("markers: want only the last restore's")
	}
	// A later, separate restore sets the data of the finished one aside
	// and drops the older aside.
	swap(&RestoreProgress{Snapshot: "s3", Token: "t3", Aside: "t3"}, "restored-3")
	if got := read(filepath.Join(restoreDir, "before-restore-t3/db")); got != "restored-2" {
		t.Errorf("new aside holds %q", got)
	}
	if read(filepath.Join(restoreDir, "before-restore-t1/db")) != "missing" {
		t.Error("the aside of a finished run of restores was kept")
	}
}

func TestRestoreRefusesUnfinishedMembership(t *testing.T) {
	tests := []struct {
		name    string
		members []string
		wantErr bool
	}{
		{"same members", []string{"n2", "n1"}, false},
		{"a member still joining", []string{"n1"}, true},
		{"a member the config dropped", []string{"n1", "n2", "n9"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRun(t, testConfig(), nil)
			r.state.EtcdMembers = tt.members
			err := r.restorableMembers()
			if (err != nil) != tt.wantErr {
				t.Fatalf("restorableMembers = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, workflow.ErrUserFixable) {
				t.Errorf("%v is not user-fixable", err)
			}
		})
	}
}

func TestRestoreRefusesUninstalledCluster(t *testing.T) {
	in, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.Restore(context.Background(), testConfig(), State{}, nil, "s", nil)
	if err == nil || !errors.Is(err, workflow.ErrUserFixable) || !strings.Contains(err.Error(), "never created") {
		t.Fatalf("restore of a cluster never created: %v", err)
	}
	if err := in.Snapshot(context.Background(), testConfig(), State{}, nil, nil); !errors.Is(err, ErrNoEtcdState) {
		t.Fatalf("snapshot of a cluster never created: %v", err)
	}
}
