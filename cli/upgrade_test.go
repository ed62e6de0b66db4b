package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUpgradeSendsTheConfigWithTheNewVersion: upgrade PUTs the cluster's
// config as read, read-only fields left out, with only the version
// changed.
func TestUpgradeSendsTheConfigWithTheNewVersion(t *testing.T) {
	const cluster = `{"id":"lab","type":"cluster","name":"lab","status":"Running","imported":false,"nodeCount":1,
		"lastOperation":{"type":"create","state":"succeeded"},"actions":["update","delete"],"kubernetesVersion":"v1.35.4",
		"sshUser":"root","nodes":[{"name":"n1","address":"10.0.0.1","roles":["controlplane","etcd","worker"]}]}`
	var put map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			_, _ = io.WriteString(w, cluster)
		case http.MethodPut:
			if err := json.NewDecoder(r.Body).Decode(&put); err != nil {
				t.Errorf("PUT body: %v", err)
			}
			_, _ = io.WriteString(w, `{"name":"lab","status":"Updating"}`)
		}
	}))
	defer srv.Close()
	dir := loggedIn(t, srv.URL)
	code, out, stderr := runCLI(t, dir, "cluster", "upgrade", "lab", "--to", "v1.36.3")
	if code != ExitOK || !strings.Contains(out, "upgrade to v1.36.3 started (Updating)") {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
	if put["kubernetesVersion"] != "v1.36.3" || put["sshUser"] != "root" || len(put["nodes"].([]any)) != 1 {
		t.Errorf("PUT %v: want the config with the new version", put)
	}
	for _, ro := range []string{"status", "lastOperation", "actions", "id", "nodeCount"} {
		if _, ok := put[ro]; ok {
			t.Errorf("PUT carries the read-only %s", ro)
		}
	}
	if code, _, stderr := runCLI(t, dir, "cluster", "upgrade", "lab"); code != ExitUsage || !strings.Contains(stderr, "to") {
		t.Errorf("without --to: exit %d, %q", code, stderr)
	}
	put = nil
	if code, out, _ := runCLI(t, dir, "cluster", "upgrade", "lab", "--to", "v1.35.4"); code != ExitOK || !strings.Contains(out, "already runs v1.35.4") || put != nil {
		t.Errorf("to the version it runs: exit %d, %q, PUT %v", code, out, put)
	}
}

// TestUpgradeOfAnUnfinishedUpgrade: the version asked for is the one an
// upgrade that did not finish was going to: retry or revert, not "already
// runs".
func TestUpgradeOfAnUnfinishedUpgrade(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("%s sent", r.Method)
		}
		_, _ = io.WriteString(w, `{"name":"lab","status":"Unavailable","kubernetesVersion":"v1.36.3","actions":["retry","revert","delete"]}`)
	}))
	defer srv.Close()
	code, _, stderr := runCLI(t, loggedIn(t, srv.URL), "cluster", "upgrade", "lab", "--to", "v1.36.3")
	if code != ExitError || !strings.Contains(stderr, "did not finish") || !strings.Contains(stderr, "cluster revert lab") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
