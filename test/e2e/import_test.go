package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

func kubeClient(t *testing.T, kubeconfig []byte) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cfg.Timeout = 10 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// events opens the admin event websocket and returns a channel of events.
func (c *client) events(t *testing.T) <-chan map[string]any {
	t.Helper()
	u := strings.Replace(c.base, "http://", "ws://", 1) + "/apis/ws.zcloud.cn/v1/events?token=" + url.QueryEscape(c.token)
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.Dial(u, nil)
	if err != nil {
		t.Fatalf("events websocket: %v (%v)", err, resp)
	}
	out := make(chan map[string]any, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var ev map[string]any
			if json.Unmarshal(msg, &ev) == nil {
				select {
				case out <- ev:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return out
}

func waitEvent(t *testing.T, events <-chan map[string]any, cluster, status string, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("event stream closed before %s became %s", cluster, status)
			}
			if ev["cluster"] == cluster && ev["status"] == status {
				return
			}
		case <-timeout:
			t.Fatalf("no event for %s becoming %s within %s", cluster, status, d)
		}
	}
}

func TestImportedClusterLifecycle(t *testing.T) {
	testbed.Require(t, testbed.NeedTestbin)
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	inst := startInstance(t, "") // default 10 s health interval
	admin := inst.admin(t)
	events := admin.events(t)

	body := admin.importCluster("live", cp.Kubeconfig)
	if body["status"] != "Connecting" || body["id"] != "live" || body["type"] != "cluster" {
		t.Errorf("import answer: %v", body)
	}
	if strings.Contains(mustJSON(t, body), "BEGIN") {
		t.Error("import answer echoes key material")
	}
	start := time.Now()
	c := admin.waitStatus("live", "Running", 20*time.Second)
	t.Logf("import → Running in %s", time.Since(start).Round(time.Millisecond))
	if c["version"] != testbed.KubeVersion {
		t.Errorf("version %v, want %s", c["version"], testbed.KubeVersion)
	}
	waitEvent(t, events, "live", "Running", 5*time.Second)

	kube := kubeClient(t, cp.Kubeconfig)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"node-role.kubernetes.io/worker": ""}}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-live"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	status, nodes := admin.do(http.MethodGet, apiPath+"/clusters/live/nodes", nil)
	if status != http.StatusOK || !strings.Contains(mustJSON(t, nodes), `"name":"node-a"`) || !strings.Contains(mustJSON(t, nodes), `"roles":["worker"]`) {
		t.Errorf("nodes: %d %v", status, nodes)
	}
	status, one := admin.do(http.MethodGet, apiPath+"/clusters/live/nodes/node-a", nil)
	if status != http.StatusOK || one["name"] != "node-a" {
		t.Errorf("node-a: %d %v", status, one)
	}
	status, one = admin.do(http.MethodGet, apiPath+"/clusters/live/nodes/nope", nil)
	expectError(t, "missing node", status, one, http.StatusNotFound, "NotFound", "nope")
	status, nss := admin.do(http.MethodGet, apiPath+"/clusters/live/namespaces", nil)
	names := []string{}
	for _, d := range nss["data"].([]any) {
		names = append(names, str(d.(map[string]any)["name"]))
	}
	for _, want := range []string{"default", "kube-system", "e2e-live"} {
		if status != http.StatusOK || !slices.Contains(names, want) {
			t.Errorf("namespaces %d %v lacks %s", status, names, want)
		}
	}

	status, raw := admin.raw(http.MethodGet, apiPath+"/clusters/live/kubeconfigs/kube-admin?download=1", nil)
	if status != http.StatusOK {
		t.Fatalf("download kubeconfig: %d %s", status, raw)
	}
	downloaded := kubeClient(t, raw)
	if _, err := downloaded.CoreV1().Namespaces().Get(ctx, "e2e-live", metav1.GetOptions{}); err != nil {
		t.Errorf("downloaded kubeconfig does not work: %v", err)
	}
	status, kc := admin.do(http.MethodGet, apiPath+"/clusters/live/kubeconfigs", nil)
	if status != http.StatusOK || !strings.Contains(mustJSON(t, kc), "kube-admin") {
		t.Errorf("kubeconfigs collection: %d %v", status, kc)
	}

	if err := cp.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	c = admin.waitStatus("live", "Unreachable", 30*time.Second)
	t.Logf("apiserver killed → Unreachable in %s (reason %q)", time.Since(killed).Round(time.Millisecond), c["reason"])
	waitEvent(t, events, "live", "Unreachable", 5*time.Second)

	if err := cp.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	admin.waitStatus("live", "Running", 30*time.Second)
	t.Logf("apiserver restarted → Running in %s", time.Since(restarted).Round(time.Millisecond))
	waitEvent(t, events, "live", "Running", 5*time.Second)

	status, del := admin.do(http.MethodDelete, apiPath+"/clusters/live", nil)
	if status != http.StatusAccepted || del["status"] != "Deleting" {
		t.Errorf("delete: %d %v", status, del)
	}
	eventually(t, 10*time.Second, "cluster deleted", func() (bool, string) {
		code, _ := admin.cluster("live")
		return code == http.StatusNotFound, http.StatusText(code)
	})
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "e2e-live", metav1.GetOptions{}); err != nil {
		t.Errorf("deleting an imported cluster touched the cluster: %v", err)
	}
}

func TestImportFailuresAndRecovery(t *testing.T) {
	testbed.Require(t, testbed.NeedTestbin)
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	inst := startInstance(t, "", "--health-interval", "1s")
	admin := inst.admin(t)

	admin.importCluster("wrong-ca", cp.WrongCAKubeconfig())
	c := admin.waitStatus("wrong-ca", "Unavailable", 20*time.Second)
	if r := str(c["reason"]); !strings.Contains(r, "certificate-authority") || !strings.Contains(r, "unknown authority") {
		t.Errorf("wrong CA reason: %q", r)
	}
	admin.importCluster("bad-token", cp.TokenKubeconfig("not-the-token"))
	c = admin.waitStatus("bad-token", "Unavailable", 20*time.Second)
	if r := str(c["reason"]); !strings.Contains(r, "401") || !strings.Contains(r, "credentials") {
		t.Errorf("bad token reason: %q", r)
	}
	status, body := admin.do(http.MethodGet, apiPath+"/clusters/bad-token/namespaces", nil)
	expectError(t, "namespaces of unavailable", status, body, http.StatusNotFound, "NotFound", "status Unavailable")

	// Reconnect with a good kubeconfig fixes it.
	status, body = admin.do(http.MethodPost, apiPath+"/clusters/bad-token?action=reconnect", map[string]string{"kubeconfig": string(cp.Kubeconfig)})
	if status != http.StatusOK || body["status"] != "Connecting" {
		t.Errorf("reconnect: %d %v", status, body)
	}
	admin.waitStatus("bad-token", "Running", 20*time.Second)

	// An API server that is down at import: Connecting (retrying) until it
	// comes up.
	if err := cp.Kill(); err != nil {
		t.Fatal(err)
	}
	admin.importCluster("late", cp.Kubeconfig)
	time.Sleep(3 * time.Second)
	if c := admin.waitStatus("late", "Connecting", time.Second); !strings.Contains(str(c["reason"]), "retrying") {
		t.Errorf("connecting reason %q does not say it retries", c["reason"])
	}
	if err := cp.Restart(); err != nil {
		t.Fatal(err)
	}
	admin.waitStatus("late", "Running", 45*time.Second)

	// Cancel of a Connecting cluster.
	admin.importCluster("nowhere", []byte(nowhereKubeconfig))
	status, body = admin.do(http.MethodPost, apiPath+"/clusters/nowhere?action=cancel", nil)
	if status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	c = admin.waitStatus("nowhere", "Unavailable", 5*time.Second)
	if !strings.Contains(str(c["reason"]), "canceled") {
		t.Errorf("canceled reason: %q", c["reason"])
	}
	status, body = admin.do(http.MethodPost, apiPath+"/clusters/nowhere?action=cancel", nil)
	expectError(t, "cancel with nothing running", status, body, http.StatusConflict, "InvalidState", "Unavailable")
}

func TestRestartKeepsEveryCluster(t *testing.T) {
	testbed.Require(t, testbed.NeedTestbin)
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	want := []string{"a", "b", "c"}
	for _, n := range want {
		admin.importCluster(n, cp.Kubeconfig)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGKILL} {
		inst.restart(sig)
		admin = inst.admin(t)
		// Listed at once, before any is reachable again.
		if got := admin.names(); !slices.Equal(got, want) {
			t.Fatalf("after %s restart: %v, want %v", sig, got, want)
		}
		for _, n := range want {
			admin.waitStatus(n, "Running", 20*time.Second)
		}
	}
	if sig := inst.exitCode(); sig == 1 {
		t.Errorf("singlecloud exited with an error")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
