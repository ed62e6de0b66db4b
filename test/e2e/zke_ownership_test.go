package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// putFile writes content to p on h, making its directory.
func putFile(t *testing.T, h *testbed.Host, p, content string) {
	t.Helper()
	if out, err := h.Exec(context.Background(), "sh", "-c", `mkdir -p "$(dirname "$1")" && printf %s "$2" > "$1"`, "sh", p, content); err != nil {
		t.Fatalf("%s: write %s: %v: %s", h.Name, p, err, out)
	}
}

// checkFile fails the test unless p on h holds content.
func checkFile(t *testing.T, h *testbed.Host, p, content string) {
	t.Helper()
	out, err := h.Exec(context.Background(), "cat", p)
	if err != nil || out != content {
		t.Errorf("%s: %s holds %q (%v), want %q: zke touched what is not its own", h.Name, p, out, err, content)
	}
}

// zke neither writes into nor deletes what it did not make: a node with
// another install's etcd data under its prefix is refused at preflight,
// the data kept; once the data is moved aside, an install writes its
// own; a delete removes what zke wrote and leaves the moved data, the
// files beside zke's directories and a worker's foreign etcd directory
// (which a worker never uses), the last reported in the delete's log.
func TestForeignPathsRefusedAndKept(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 2, testbed.HostOptions{Docker: true})
	h1, h2 := hosts[0], hosts[1]
	inst := startInstance(t, "")
	admin := inst.admin(t)
	body := clusterBody("own", h1.Gateway+":8080", hosts)
	body["nodes"].([]map[string]any)[1]["roles"] = []string{"worker"}

	putFile(t, h1, "/var/lib/etcd/member/snap/db", "another etcd")
	putFile(t, h2, "/var/lib/etcd/member/snap/db", "a worker's other etcd")
	siblings := []string{"/etc/kubernetes/admin.conf", "/var/lib/etcd.bak/db", "/var/lib/kubelet-old/config.yaml", "/var/log/pods-archive/0.log"}
	for _, h := range hosts {
		for _, p := range siblings {
			putFile(t, h, p, "not zke's")
		}
	}

	// 1. Refused at preflight, the data kept.
	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	admin.failedWith(t, "own", "foreign etcd data", "host1", "/var/lib/etcd is a non-empty directory not made by zke",
		"move /var/lib/etcd away", "nodes[0].prefixPath")
	checkFile(t, h1, "/var/lib/etcd/member/snap/db", "another etcd")
	t.Logf("refused in %s", time.Since(start).Round(time.Second))

	// 2. Moved aside (the testbed's /var/lib/etcd is a mount point: its
	// content moves), the retry gets past preflight and writes zke's
	// files; it is cancelled once etcd starts.
	if out, err := h1.Run(context.Background(), "mv /var/lib/etcd/member /var/lib/etcd.moved"); err != nil {
		t.Fatalf("move the data aside: %v: %s", err, out)
	}
	admin.mustDo(http.MethodPost, apiPath+"/clusters/own?action=retry", nil, http.StatusOK)
	admin.waitStep(t, "own", "etcd")
	admin.mustDo(http.MethodPost, apiPath+"/clusters/own?action=cancel", nil, http.StatusOK)
	admin.waitStatus("own", "Unavailable", 30*time.Second)
	if out, err := h1.Exec(context.Background(), "ls", "/etc/kubernetes/ssl"); err != nil || !strings.Contains(out, "kube-ca.pem") {
		t.Fatalf("host1: zke wrote no certificates: %q %v", out, err)
	}

	// 3. Deleted: zke's files gone, the rest kept, host2's etcd
	// directory reported as left.
	admin.mustDo(http.MethodDelete, apiPath+"/clusters/own", nil, http.StatusAccepted)
	var left string
	admin.followZkelogUntil(t, "own", 2*time.Minute, func(f zkelogFrame) bool {
		if f.Type == "log" && f.Level == "warn" && f.Node == "host2" && strings.Contains(f.Message, "/var/lib/etcd") {
			left = f.Message
		}
		return f.Type == "result"
	})
	eventually(t, 2*time.Minute, "cluster own deleted", func() (bool, string) {
		code, body := admin.cluster("own")
		return code == http.StatusNotFound, str(body["status"]) + " " + str(body["reason"])
	})
	if !strings.Contains(left, "left /var/lib/etcd as it is") {
		t.Errorf("the delete's log does not report host2's /var/lib/etcd as left (got %q)", left)
	}
	t.Logf("delete warned: %s", left)
	hostClean(t, h1)
	checkFile(t, h1, "/var/lib/etcd.moved/snap/db", "another etcd")
	checkFile(t, h2, "/var/lib/etcd/member/snap/db", "a worker's other etcd")
	for _, h := range hosts {
		for _, p := range siblings {
			checkFile(t, h, p, "not zke's")
		}
	}
	t.Logf("whole test %s", time.Since(start).Round(time.Second))
}
