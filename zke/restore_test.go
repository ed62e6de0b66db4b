package zke

import (
	"context"
	"errors"
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
	if !slices.Equal(spec.Cmd, want) || !slices.Equal(spec.Entrypoint, []string{"etcdctl"}) {
		t.Errorf("job command %v %v, want etcdctl %v", spec.Entrypoint, spec.Cmd, want)
	}
	if spec.Image != r.images[model.ImageEtcd] || spec.NetworkMode != "none" || !slices.Equal(spec.Binds, []string{"/var/lib/etcd-restore:/restore"}) {
		t.Errorf("job spec %+v: want the etcd image, no network, only the restore directory", spec)
	}
}

func TestSwapRestoredScript(t *testing.T) {
	n := etcdNode("n1", "10.0.0.1")
	n.PrefixPath = "/opt/it's"
	got := swapRestoredScript(n, "/opt/it's/var/lib/etcd-restore/tok.done")
	for _, want := range []string{
		"set -e",
		`m='/opt/it'\''s/var/lib/etcd/member'`,
		`b='/opt/it'\''s/var/lib/etcd-restore/before-restore'`,
		`if [ -d "$m" ]; then rm -rf "$b"; mv "$m" "$b"; fi`,
		`mv "$d/member" "$m"`,
		`touch '/opt/it'\''s/var/lib/etcd-restore/tok.done'`,
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
