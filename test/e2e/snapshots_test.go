package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// checkSnapshot takes an etcd snapshot of cluster through the API and
// checks it from outside: it holds an object written just before (found
// in the downloaded bytes, never in the files on the server's disk), its
// revision and key count are what etcd's own tool reads from the
// download, the download's sha256 is the one listed, its restore drill
// marks it verified, and it joins the cluster's operation history. It
// returns the snapshot's id.
func checkSnapshot(t *testing.T, admin *client, inst *instance, kube kubernetes.Interface, cluster string) string {
	t.Helper()
	ctx := context.Background()
	marker := "snapshot-marker-" + hex.EncodeToString([]byte(time.Now().Format("150405.000")))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-snapshot"}, Data: map[string]string{"marker": marker}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	body := admin.mustDo(http.MethodPost, apiPath+"/clusters/"+cluster+"/snapshots", nil, http.StatusCreated)
	t.Logf("snapshot taken in %s: %v", time.Since(start).Round(time.Millisecond), body)
	id := str(body["id"])
	rev, _ := body["revision"].(float64)
	keys, _ := body["keyCount"].(float64)
	size, _ := body["size"].(float64)
	sum := str(body["sha256"])
	if id == "" || body["trigger"] != "manual" || body["pinned"] != false || !strings.HasPrefix(str(body["member"]), "host") ||
		rev <= 0 || keys < 100 || size <= 0 || len(sum) != 64 {
		t.Fatalf("snapshot answered %v", body)
	}

	// The drill restores it on the server and counts its keys.
	var snap map[string]any
	eventually(t, 3*time.Minute, "snapshot "+id+" verified by its drill", func() (bool, string) {
		snap = admin.mustDo(http.MethodGet, apiPath+"/clusters/"+cluster+"/snapshots/"+id, nil, http.StatusOK)
		if snap["verification"] == "failed" {
			t.Fatalf("the drill failed: %v", snap)
		}
		return snap["verification"] == "verified", str(snap["verification"])
	})
	t.Logf("drill: %v s", snap["drillSeconds"])

	// The download is the plaintext etcd snapshot.
	status, raw := admin.raw(http.MethodGet, apiPath+"/clusters/"+cluster+"/snapshots/"+id+"?download=1", nil)
	if status != http.StatusOK || int64(len(raw)) != int64(size) {
		t.Fatalf("download: status %d, %d bytes, want %v", status, len(raw), size)
	}
	if got := sha256.Sum256(raw); hex.EncodeToString(got[:]) != sum {
		t.Fatalf("downloaded sha256 %x, listed %s", got, sum)
	}
	if !bytes.Contains(raw, []byte(marker)) {
		t.Errorf("the snapshot does not hold the ConfigMap written before it")
	}
	file := filepath.Join(t.TempDir(), "download.db")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := snapshot.NewV3(zap.NewNop()).Status(file)
	if err != nil || st.Revision != int64(rev) || st.TotalKey != int(keys) {
		t.Errorf("etcdutl reads revision %d and %d keys from the download (%v), the API listed %v and %v", st.Revision, st.TotalKey, err, rev, keys)
	}

	// Sealed at rest: no file of the server's snapshot directory holds
	// the marker.
	dir := filepath.Join(inst.dir, "snapshots", cluster)
	files, err := os.ReadDir(dir)
	if err != nil || len(files) == 0 {
		t.Fatalf("snapshot directory %s: %v, %d files", dir, err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s holds the snapshot's plaintext", f.Name())
		}
	}

	list := admin.mustDo(http.MethodGet, apiPath+"/clusters/"+cluster+"/snapshots", nil, http.StatusOK)
	if data, _ := list["data"].([]any); len(data) == 0 || str(data[0].(map[string]any)["id"]) != id {
		t.Errorf("list %v, want %s first", list, id)
	}
	status, resp := admin.do(http.MethodGet, apiPath+"/clusters/"+cluster+"/snapshots/20200101-000000-0000", nil)
	expectError(t, "unknown snapshot", status, resp, http.StatusNotFound, "NotFound", "20200101-000000-0000")
	ops := admin.mustDo(http.MethodGet, apiPath+"/clusters/"+cluster+"/operations", nil, http.StatusOK)
	found := false
	for _, o := range ops["data"].([]any) {
		op := o.(map[string]any)
		found = found || (op["kind"] == "snapshot" && op["state"] == "succeeded" && op["startedBy"] == "admin")
	}
	if !found {
		t.Errorf("no succeeded snapshot in the operation history: %v", ops)
	}
	return id
}

// checkPinnedSnapshot checks that cluster has a snapshot taken before an
// operation of kind op, kept apart from the schedule's rotation.
func checkPinnedSnapshot(t *testing.T, admin *client, cluster, op string) {
	t.Helper()
	list := admin.mustDo(http.MethodGet, apiPath+"/clusters/"+cluster+"/snapshots", nil, http.StatusOK)
	for _, s := range list["data"].([]any) {
		m := s.(map[string]any)
		if m["trigger"] == "before "+op && m["pinned"] == true {
			return
		}
	}
	t.Errorf("no pinned snapshot taken before the %s: %v", op, list)
}

// deleteSnapshot deletes one snapshot and checks it is gone.
func deleteSnapshot(t *testing.T, admin *client, cluster, id string) {
	t.Helper()
	admin.mustDo(http.MethodDelete, apiPath+"/clusters/"+cluster+"/snapshots/"+id, nil, http.StatusNoContent)
	status, resp := admin.do(http.MethodGet, apiPath+"/clusters/"+cluster+"/snapshots/"+id, nil)
	expectError(t, "deleted snapshot", status, resp, http.StatusNotFound, "NotFound", id)
}

// checkRestore writes an object after snapshot id was taken, restores the
// snapshot through the API and checks the outcome from outside: the
// object written after it is gone, the one written before it is back, etcd
// has every member and the API answers. A restore of an unknown snapshot
// is refused with 422 and changes nothing.
func checkRestore(t *testing.T, admin *client, kube kubernetes.Interface, cluster, id string, etcdHost *testbed.Host, etcdMembers ...string) {
	t.Helper()
	ctx := context.Background()
	status, resp := admin.do(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=restore", map[string]string{"snapshot": "20200101-000000-0000"})
	expectError(t, "restore of an unknown snapshot", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "snapshot")
	if err := kube.CoreV1().ConfigMaps("default").Delete(ctx, "before-snapshot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	after := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-snapshot"}, Data: map[string]string{"k": "v"}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, after, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	body := admin.mustDo(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=restore", map[string]string{"snapshot": id}, http.StatusOK)
	if body["status"] != "Updating" {
		t.Fatalf("restore answered %v", body["status"])
	}
	status, resp = admin.do(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=restore", map[string]string{"snapshot": id})
	expectError(t, "a second restore while one runs", status, resp, http.StatusConflict, "InvalidState")
	frames, _ := admin.followZkelog(t, cluster, 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("restore ended %+v", last)
	}
	t.Logf("restore took %s", time.Since(start).Round(time.Second))
	checkPinnedSnapshot(t, admin, cluster, "restore")
	checkEtcdMembers(t, etcdHost, etcdMembers...)
	eventually(t, 2*time.Minute, "the restored objects through the API", func() (bool, string) {
		_, errAfter := kube.CoreV1().ConfigMaps("default").Get(ctx, "after-snapshot", metav1.GetOptions{})
		cm, errBefore := kube.CoreV1().ConfigMaps("default").Get(ctx, "before-snapshot", metav1.GetOptions{})
		if errBefore != nil {
			return false, "before-snapshot: " + errBefore.Error()
		}
		return apierrors.IsNotFound(errAfter) && cm.Data["marker"] != "", fmt.Sprintf("after-snapshot: %v", errAfter)
	})
}
