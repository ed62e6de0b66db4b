package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func sampleClusters() []object {
	created := time.Now().Add(-3 * time.Hour).UTC().Format(time.RFC3339)
	return []object{
		{"name": "lab", "status": "Creating", "version": "v1.36.3", "nodeCount": float64(3), "imported": false, "creationTimestamp": created,
			"lastOperation": map[string]any{"type": "create", "state": "running", "index": float64(3), "total": float64(9), "percent": float64(40)}},
		{"name": "prod", "status": "Unreachable", "imported": true, "nodeCount": float64(0), "reason": "dial tcp: connection\nrefused"},
	}
}

func TestPrintList(t *testing.T) {
	for _, tc := range []struct {
		output string
		check  func(t *testing.T, out string)
	}{
		{outTable, func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") || strings.Contains(lines[0], "REASON") {
				t.Fatalf("table:\n%s", out)
			}
			for _, want := range []string{"lab", "Creating", "v1.36.3", "create running 3/9 40%", "3h"} {
				if !strings.Contains(lines[1], want) {
					t.Errorf("row %q lacks %q", lines[1], want)
				}
			}
			if !strings.Contains(lines[2], "prod") || !strings.Contains(lines[2], " - ") {
				t.Errorf("row %q: empty cells must show -", lines[2])
			}
		}},
		{outWide, func(t *testing.T, out string) {
			if !strings.Contains(out, "REASON") || !strings.Contains(out, "imported") || !strings.Contains(out, "dial tcp: connection refused") {
				t.Errorf("wide (reason on one line):\n%s", out)
			}
		}},
		{outJSON, func(t *testing.T, out string) {
			var got []object
			if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 2 || got[1]["reason"] == nil {
				t.Errorf("json: %v\n%s", err, out)
			}
		}},
		{outYAML, func(t *testing.T, out string) {
			var got []object
			if err := yaml.Unmarshal([]byte(out), &got); err != nil || len(got) != 2 || got[0]["name"] != "lab" {
				t.Errorf("yaml: %v\n%s", err, out)
			}
		}},
		{outName, func(t *testing.T, out string) {
			if out != "cluster/lab\ncluster/prod\n" {
				t.Errorf("name: %q", out)
			}
		}},
	} {
		t.Run(tc.output, func(t *testing.T) {
			var b bytes.Buffer
			if err := printList(&b, tc.output, clusterKind(), sampleClusters()); err != nil {
				t.Fatal(err)
			}
			tc.check(t, b.String())
		})
	}
}

func TestPrintOneAndEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := printOne(&b, outYAML, clusterKind(), sampleClusters()[0]); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "creationTimestamp:") || !strings.Contains(b.String(), "\nname: lab\n") {
		t.Errorf("one as yaml:\n%s", b.String())
	}
	b.Reset()
	if err := printList(&b, outTable, clusterKind(), nil); err != nil || b.String() != "No clusters found.\n" {
		t.Errorf("an empty table: %q %v", b.String(), err)
	}
	b.Reset()
	if err := printList(&b, outTable, userKind(), []object{{"name": "ann", "projects": []any{map[string]any{"cluster": "lab", "namespace": "_all_namespaces"}, map[string]any{"cluster": "prod", "namespace": "web"}}}}); err != nil || !strings.Contains(b.String(), "lab/*, prod/web") {
		t.Errorf("users: %q %v", b.String(), err)
	}
}

func TestCheckOutput(t *testing.T) {
	for _, o := range []string{"", "table", "wide", "json", "yaml", "name"} {
		if err := checkOutput(o); err != nil {
			t.Errorf("%q: %v", o, err)
		}
	}
	if err := checkOutput("jsonpath"); err == nil {
		t.Error("jsonpath accepted")
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "0s", 45 * time.Second: "45s", 5 * time.Minute: "5m", 5 * time.Hour: "5h", 72 * time.Hour: "3d"} {
		if got := humanDuration(d); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}

func TestOtherKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    kind
		obj  object
		want []string
	}{
		{"host", hostKind(), object{"name": "n1", "address": "10.0.0.11", "status": "Reachable", "system": map[string]any{"os": "debian", "cpus": 4.0, "memoryBytes": float64(8 << 30)}}, []string{"n1", "10.0.0.11", "Reachable", "debian", "4", "8.0Gi"}},
		{"environment", environmentKind(), object{"name": "lab", "kind": "kubernetes", "ready": true}, []string{"lab", "kubernetes", "true"}},
		{"application", applicationKind(), object{"name": "web", "environment": "lab", "phase": "Installed", "spec": map[string]any{"version": "v2"}}, []string{"web", "lab", "v2", "Installed"}},
		{"status", appStatusKind(), object{"app": "web", "phase": "Installed", "healthy": map[string]any{"level": 90.0}, "versions": []any{map[string]any{"version": "v1", "ready": 9.0, "desired": 9.0}}}, []string{"web", "90", "v1 9/9 ready"}},
		{"snapshot", snapshotKind(), object{"id": "20261125-1", "trigger": "manual", "size": float64(3 << 20), "verification": "verified"}, []string{"20261125-1", "manual", "3Mi", "verified"}},
		{"operation", operationKind(), object{"kind": "create", "state": "succeeded", "index": 10.0, "total": 10.0, "percent": 100.0, "startedAt": "2026-01-01T00:00:00Z", "endedAt": "2026-01-01T00:01:30.5Z"}, []string{"create", "succeeded", "10/10 100%", "1m31s"}},
	} {
		var b bytes.Buffer
		if err := printOne(&b, outTable, tc.k, tc.obj); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %q", tc.name, b.String(), w)
			}
		}
	}
	var b bytes.Buffer
	_ = printList(&b, outName, snapshotKind(), []object{{"id": "s1"}})
	if b.String() != "snapshot/s1\n" {
		t.Errorf("-o name of an object without a name: %q", b.String())
	}
}
