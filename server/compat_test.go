package server

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// withInstaller gives the test API a cluster manager with zke's real
// installer, on its own bbolt file. Nothing listens at the nodes' SSH
// port, so every install fails at its connect step, quickly (one dial
// attempt), and the cluster ends Unavailable.
func withInstaller(t *testing.T) func(*Options) {
	return func(o *Options) {
		db := storagetest.Open(t)
		inst, err := zke.New(zke.Options{Transport: transport.Options{DialAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		mgr, err := clustermanager.New(clustermanager.Options{Store: db, Sealer: db.Sealer(), Bus: o.Bus, Installer: inst})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("cluster manager did not stop within 30s")
			}
		})
		o.Clusters = mgr
	}
}

func sshKey(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

// clusterJSON is a create body as the original singlecloud's clients send
// it: sshPort as a string and a disabled loadBalance section.
func clusterJSON(t *testing.T, name string) map[string]any {
	return map[string]any{
		"name": name, "sshUser": "root", "sshKey": sshKey(t), "sshPort": "2",
		"singleCloudAddress": "127.0.0.9:8080", "network": map[string]any{"plugin": "bridge"},
		"loadBalance": map[string]any{"enable": false, "masterServer": "10.0.0.9", "user": "lb", "password": "lb-secret"},
		"nodes": []any{
			map[string]any{"name": "n1", "address": "127.0.0.1", "roles": []string{"controlplane", "etcd"}},
			map[string]any{"name": "n2", "address": "127.0.0.2", "roles": []string{"worker"}, "sshPort": "3"},
		},
	}
}

// waitStatus polls the cluster until its status is want.
func (a *testAPI) waitStatus(token, name, want string) map[string]any {
	a.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := a.do(http.MethodGet, apiPrefix+"/clusters/"+name, token, nil)
		m := r.JSON(a.t)
		if m["status"] == want {
			return m
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("cluster %s is %v, not %s, after 60s: %s", name, m["status"], want, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestOriginalClientClusterBody(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	r := api.do(http.MethodPost, apiPrefix+"/clusters", admin, clusterJSON(t, "lab"))
	if r.Status != http.StatusCreated {
		t.Fatalf("create with sshPort as a string: %d %s", r.Status, r.Body)
	}
	got := api.waitStatus(admin, "lab", "Unavailable")
	if got["sshPort"] != float64(2) {
		t.Errorf("sshPort = %#v, want the number 2", got["sshPort"])
	}
	nodes, _ := got["nodes"].([]any)
	if len(nodes) != 2 || nodes[1].(map[string]any)["sshPort"] != float64(3) {
		t.Errorf("nodes = %v, want n2's sshPort the number 3", got["nodes"])
	}
	lb, _ := got["loadBalance"].(map[string]any)
	if lb["enable"] != false || lb["masterServer"] != "10.0.0.9" || lb["user"] != "lb" {
		t.Errorf("loadBalance = %v, want it stored and shown", got["loadBalance"])
	}
	if _, ok := lb["password"]; ok || strings.Contains(string(api.do(http.MethodGet, apiPrefix+"/clusters", admin, nil).Body), "lb-secret") {
		t.Errorf("the load balancer password is shown: %v", lb)
	}
	links, _ := got["links"].(map[string]any)
	if links["update"] != apiPrefix+"/clusters/lab" || links["remove"] != apiPrefix+"/clusters/lab" {
		t.Errorf("admin's links = %v, want update and remove", links)
	}

	// An enabled load balancer is refused with the reason; nothing changes.
	body := clusterJSON(t, "lb")
	body["loadBalance"] = map[string]any{"enable": true, "masterServer": "10.0.0.9"}
	wantError(t, api.do(http.MethodPost, apiPrefix+"/clusters", admin, body), http.StatusUnprocessableEntity, CodeInvalidOption, "loadBalance.enable", "not built")
	if r := api.do(http.MethodGet, apiPrefix+"/clusters/lb", admin, nil); r.Status != http.StatusNotFound {
		t.Errorf("refused create left cluster lb: %d %s", r.Status, r.Body)
	}
	// A port that is not a number is named.
	body = clusterJSON(t, "bad")
	body["sshPort"] = "ssh"
	wantError(t, api.do(http.MethodPost, apiPrefix+"/clusters", admin, body), http.StatusUnprocessableEntity, CodeInvalidBodyContent, `"sshPort" must be a port number`)
	// Read-only fields have no place in a create.
	body = clusterJSON(t, "ro")
	body["status"] = "Running"
	wantError(t, api.do(http.MethodPost, apiPrefix+"/clusters", admin, body), http.StatusUnprocessableEntity, CodeInvalidOption, "status: read-only")
}

func TestPutFetchedCluster(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	if r := api.do(http.MethodPost, apiPrefix+"/clusters", admin, clusterJSON(t, "lab")); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	api.waitStatus(admin, "lab", "Unavailable")
	fetched := api.do(http.MethodGet, apiPrefix+"/clusters/lab", admin, nil)

	edit := func(change func(m map[string]any)) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(fetched.Body, &m); err != nil {
			t.Fatal(err)
		}
		change(m)
		return m
	}
	tests := []struct {
		name      string
		change    func(m map[string]any)
		fragments []string
		code      string
	}{
		{"changed id", func(m map[string]any) { m["id"] = "other" }, []string{"id: read-only"}, CodeInvalidOption},
		{"changed status", func(m map[string]any) { m["status"] = "Running" }, []string{"status: read-only", "as fetched"}, CodeInvalidOption},
		{"changed links and nodeCount", func(m map[string]any) {
			m["links"] = map[string]any{"self": "/x"}
			m["nodeCount"] = 7
		}, []string{"links, nodeCount: read-only"}, CodeInvalidOption},
		{"typo", func(m map[string]any) { m["sshUsr"] = "root" }, []string{`unknown field "sshUsr"`}, CodeInvalidBodyContent},
		{"enabled load balancer", func(m map[string]any) { m["loadBalance"] = map[string]any{"enable": true} }, []string{"loadBalance.enable"}, CodeInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := api.do(http.MethodPut, apiPrefix+"/clusters/lab", admin, edit(tt.change))
			wantError(t, r, http.StatusUnprocessableEntity, tt.code, tt.fragments...)
		})
	}
	if now := api.do(http.MethodGet, apiPrefix+"/clusters/lab", admin, nil); string(now.Body) != string(fetched.Body) {
		t.Fatalf("refused updates changed the cluster:\n%s\n%s", fetched.Body, now.Body)
	}

	// The body as fetched, with a node added, is an update; the read-only
	// fields are ignored (a stale certificate warning too: its daysLeft
	// moves with the calendar), and sshPort may still be a string.
	r := api.do(http.MethodPut, apiPrefix+"/clusters/lab", admin, edit(func(m map[string]any) {
		m["certificateWarning"] = map[string]any{"certificate": "kube-apiserver", "daysLeft": 3}
		m["nodes"] = append(m["nodes"].([]any), map[string]any{"name": "n3", "address": "127.0.0.3", "roles": []string{"worker"}, "sshPort": "4"})
	}))
	if r.Status != http.StatusOK {
		t.Fatalf("PUT of the fetched body with a node added: %d %s", r.Status, r.Body)
	}
	got := api.waitStatus(admin, "lab", "Unavailable")
	if nodes, _ := got["nodes"].([]any); len(nodes) != 3 {
		t.Fatalf("after the update the cluster has nodes %v, want 3", got["nodes"])
	}
}

func TestClusterLinksFollowTheCaller(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	if r := api.do(http.MethodPost, apiPrefix+"/clusters", admin, clusterJSON(t, "lab")); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	ann := api.createUser("ann", "pw", auth.Project{Cluster: "lab", Namespace: "default"})
	for _, path := range []string{"/clusters/lab", "/clusters"} {
		body := string(api.do(http.MethodGet, apiPrefix+path, ann, nil).Body)
		if !strings.Contains(body, `"self":"`+apiPrefix+`/clusters/lab"`) || strings.Contains(body, `"update"`) || strings.Contains(body, `"remove"`) {
			t.Errorf("GET %s as a granted user: %s; want the cluster without update/remove links", path, body)
		}
		body = string(api.do(http.MethodGet, apiPrefix+path, admin, nil).Body)
		if !strings.Contains(body, `"update":"`+apiPrefix+`/clusters/lab"`) || !strings.Contains(body, `"remove":"`+apiPrefix+`/clusters/lab"`) {
			t.Errorf("GET %s as admin: %s; want update and remove links", path, body)
		}
	}
}

func TestZkelogAsText(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	if r := api.do(http.MethodPost, apiPrefix+"/clusters", admin, clusterJSON(t, "lab")); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	api.waitStatus(admin, "lab", "Unavailable")
	base := "ws" + strings.TrimPrefix(api.URL, "http") + wsPrefix + "/clusters/lab/zkelog?token=" + admin
	read := func(query string) []string {
		t.Helper()
		d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
		conn, resp, err := d.Dial(base+query, nil)
		if err != nil {
			t.Fatalf("dial zkelog%s: %v (%v)", query, err, resp)
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		var msgs []string
		for {
			typ, msg, err := conn.ReadMessage()
			if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				return msgs
			}
			if err != nil {
				t.Fatalf("zkelog%s after %d messages: %v", query, len(msgs), err)
			}
			if typ != websocket.TextMessage {
				t.Fatalf("message type %d", typ)
			}
			msgs = append(msgs, string(msg))
		}
	}
	frames, lines := read(""), read("&format=text")
	if len(lines) == 0 || len(lines) != len(frames) {
		t.Fatalf("%d text lines for %d JSON frames", len(lines), len(frames))
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "{") || strings.Contains(l, "\n") || !strings.HasPrefix(frames[i], "{") {
			t.Fatalf("line %d = %q (frame %s): want one plain line per JSON frame", i, l, frames[i])
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "RESULT") || !strings.Contains(last, "cluster is Unavailable") {
		t.Fatalf("last line %q does not give the outcome", last)
	}
	wantError(t, api.do(http.MethodGet, wsPrefix+"/clusters/lab/zkelog?format=xml", admin, nil), http.StatusUnprocessableEntity, CodeInvalidOption, "format")
}
