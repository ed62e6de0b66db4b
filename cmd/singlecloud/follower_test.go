package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// startPair starts a leader and a follower of one new prefix and logs the
// admin in.
func startPair(t *testing.T) (leader, follower *etcdServer, token string) {
	t.Helper()
	endpoint := etcdtest.Shared(t).Endpoint
	prefix := etcdtest.UniquePrefix(t)
	keyFile := filepath.Join(t.TempDir(), "singlecloud.key")
	leader = startEtcdRun(t, endpoint, prefix, keyFile)
	follower = startEtcdRun(t, endpoint, prefix, keyFile)
	waitLeader(t, follower.base, leader.base)
	return leader, follower, leader.login(t)
}

// getServed is get with the replica that answered from its own copy of
// the store ("" when the leader answered).
func getServed(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header.Get(server.ServedByHeader)
}

// unreachableKubeconfig points at a closed loopback port: an imported
// cluster of it keeps retrying its connection.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
users:
- name: u
  user:
    token: t
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
`

// A follower answers reads of clusters, their history and users itself,
// from its watch-fed copy of the store, and never older than a write
// acknowledged before the read, wherever that write was made: a write on
// the leader read at once through the follower, and a write forwarded by
// the follower read at once through it. What it does not serve (live
// reads of a cluster) still goes to the leader.
func TestFollowerAnswersReadsFromItsCopy(t *testing.T) {
	leader, follower, token := startPair(t)
	api := "/apis/zcloud.cn/v1"

	for i := range 20 {
		name := fmt.Sprintf("user%d", i)
		via := leader
		if i%2 == 1 {
			via = follower // forwarded to the leader
		}
		if status, body := do(t, http.MethodPost, via.base+api+"/users", token,
			`{"name":"`+name+`","password":"`+auth.PasswordDigest("pw-"+name)+`"}`); status != http.StatusCreated {
			t.Fatalf("create %s through %s: %d %s", name, via.base, status, body)
		}
		status, body, servedBy := getServed(t, follower.base+api+"/users/"+name, token)
		if status != http.StatusOK || servedBy != follower.base {
			t.Fatalf("read %s through the follower right after its write: %d (served by %q) %s", name, status, servedBy, body)
		}
	}

	status, body := do(t, http.MethodPost, leader.base+api+"/clusters?action=import", token,
		fmt.Sprintf(`{"name":"imported","kubeconfig":%q}`, unreachableKubeconfig))
	if status != http.StatusCreated {
		t.Fatalf("import: %d %s", status, body)
	}
	status, body, servedBy := getServed(t, follower.base+api+"/clusters/imported", token)
	var c struct{ Name, Status string }
	if err := json.Unmarshal([]byte(body), &c); err != nil || status != http.StatusOK || servedBy != follower.base ||
		c.Name != "imported" || c.Status == "" {
		t.Fatalf("the imported cluster through the follower: %d (served by %q) %s", status, servedBy, body)
	}
	for _, path := range []string{"/clusters", "/clusters?limit=10&sort=name", "/clusters/imported/operations", "/users"} {
		status, body, servedBy := getServed(t, follower.base+api+path, token)
		if status != http.StatusOK || servedBy != follower.base || !strings.Contains(body, `"imported"`) && !strings.Contains(body, `"admin"`) {
			t.Errorf("GET %s through the follower: %d (served by %q) %s", path, status, servedBy, body)
		}
	}
	// The leader's and the follower's whole lists name the same clusters.
	_, fromLeader, _ := getServed(t, leader.base+api+"/clusters", token)
	_, fromFollower, _ := getServed(t, follower.base+api+"/clusters", token)
	if names(t, fromLeader) != names(t, fromFollower) {
		t.Errorf("cluster lists differ: leader %s, follower %s", names(t, fromLeader), names(t, fromFollower))
	}
	// Hosts and the commands run on them.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	hostBody, _ := json.Marshal(map[string]any{"name": "h1", "address": "127.0.0.1", "port": 1,
		"sshKey": string(pem.EncodeToMemory(block)), "labels": map[string]string{"rack": "a"}})
	if status, body := do(t, http.MethodPost, leader.base+api+"/hosts", token, string(hostBody)); status != http.StatusCreated {
		t.Fatalf("register a host: %d %s", status, body)
	}
	for _, path := range []string{"/hosts/h1", "/hosts", "/hosts/commands"} {
		status, body, servedBy := getServed(t, follower.base+api+path, token)
		if status != http.StatusOK || servedBy != follower.base || (path != "/hosts/commands" && !strings.Contains(body, `"rack"`)) ||
			strings.Contains(body, "PRIVATE KEY") {
			t.Errorf("GET %s through the follower: %d (served by %q) %s", path, status, servedBy, body)
		}
	}
	// Environments and their applications.
	if status, body := do(t, http.MethodPost, leader.base+api+"/environments", token,
		`{"name":"web","kind":"hosts","selector":"rack=a"}`); status != http.StatusCreated {
		t.Fatalf("create an environment: %d %s", status, body)
	}
	for _, path := range []string{"/environments", "/environments/web", "/environments/web/applications"} {
		status, body, servedBy := getServed(t, follower.base+api+path, token)
		if status != http.StatusOK || servedBy != follower.base || (path != "/environments/web/applications" && !strings.Contains(body, `"rack=a"`)) {
			t.Errorf("GET %s through the follower: %d (served by %q) %s", path, status, servedBy, body)
		}
	}
	if status, _, servedBy := getServed(t, follower.base+api+"/environments/web/applications/none", token); status != http.StatusNotFound || servedBy != follower.base {
		t.Errorf("a missing application through the follower: %d (served by %q), want 404 from it", status, servedBy)
	}
	if _, _, servedBy := getServed(t, follower.base+api+"/hosts/commands/none?watch=true", token); servedBy != "" {
		t.Errorf("a command's live output was answered by the follower (%q), want the leader", servedBy)
	}
	// Live reads and unknown tokens are not the follower's to answer.
	if _, _, servedBy := getServed(t, follower.base+api+"/clusters/imported/nodes", token); servedBy != "" {
		t.Errorf("a live read was answered by the follower (%q), want the leader", servedBy)
	}
	if status, _, _ := getServed(t, follower.base+api+"/clusters", "not-a-token"); status != http.StatusUnauthorized {
		t.Errorf("a bad token through the follower: %d, want 401", status)
	}
	// A user deleted on the leader is gone at once through the follower.
	if status, body := do(t, http.MethodDelete, leader.base+api+"/users/user0", token, ""); status/100 != 2 {
		t.Fatalf("delete user0: %d %s", status, body)
	}
	if status, _, servedBy := getServed(t, follower.base+api+"/users/user0", token); status != http.StatusNotFound || servedBy != follower.base {
		t.Errorf("a deleted user through the follower: %d (served by %q), want 404 from it", status, servedBy)
	}
}

// names lists the names of a cluster collection's data, in order.
func names(t *testing.T, body string) string {
	t.Helper()
	var col struct{ Data []struct{ Name string } }
	if err := json.Unmarshal([]byte(body), &col); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var out []string
	for _, d := range col.Data {
		out = append(out, d.Name)
	}
	return strings.Join(out, ",")
}

// A follower serves the events websocket itself, from the leader's events
// relayed through etcd: a client connected to it sees the leader's
// events, and keeps its stream when the leader stops and this follower
// takes over, seeing the new leader's events on the same connection.
func TestFollowerEventsSurviveAFailover(t *testing.T) {
	leader, follower, token := startPair(t)
	api := "/apis/zcloud.cn/v1"

	wsURL := "ws" + strings.TrimPrefix(follower.base, "http") + "/apis/ws.zcloud.cn/v1/events?token=" + token
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatalf("events websocket through the follower: %v", err)
	}
	defer conn.Close()
	waitClusterEvent := func(cluster string) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			var ev struct{ Type, Cluster string }
			if err := conn.ReadJSON(&ev); err != nil {
				t.Fatalf("waiting for an event of %s: %v", cluster, err)
			}
			if ev.Cluster == cluster {
				return
			}
		}
	}
	importCluster := func(base, name string) {
		t.Helper()
		if status, body := do(t, http.MethodPost, base+api+"/clusters?action=import", token,
			fmt.Sprintf(`{"name":%q,"kubeconfig":%q}`, name, unreachableKubeconfig)); status != http.StatusCreated {
			t.Fatalf("import %s: %d %s", name, status, body)
		}
	}
	importCluster(leader.base, "before-failover")
	waitClusterEvent("before-failover")

	leader.stop(t)
	waitLeader(t, follower.base, follower.base)
	importCluster(follower.base, "after-failover")
	waitClusterEvent("after-failover")
}

// A user's stream served by a follower ends when the leader revokes the
// user's tokens: the follower learns of the password reset or the delete
// through its copy of the store, and closes the stream with 1008.
func TestFollowerStreamsEndWhenTheLeaderRevokes(t *testing.T) {
	leader, follower, admin := startPair(t)
	api := "/apis/zcloud.cn/v1"
	for i, revoke := range []struct{ method, path, body, reason string }{
		{http.MethodPost, "/users/%s?action=resetPassword", `{"password":"` + auth.PasswordDigest("another-pw") + `"}`, "the password changed"},
		{http.MethodDelete, "/users/%s", "", "the user was deleted"},
	} {
		user := fmt.Sprintf("ann%d", i)
		if status, body := do(t, http.MethodPost, leader.base+api+"/users", admin,
			`{"name":"`+user+`","password":"`+auth.PasswordDigest("ann-pw")+`"}`); status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", user, status, body)
		}
		status, body := do(t, http.MethodPost, leader.base+api+"/users/"+user+"?action=login", "",
			`{"password":"`+auth.PasswordDigest("ann-pw")+`"}`)
		var login struct{ Token string }
		if err := json.Unmarshal([]byte(body), &login); err != nil || status != http.StatusOK {
			t.Fatalf("login %s: %d %s", user, status, body)
		}
		wsURL := "ws" + strings.TrimPrefix(follower.base, "http") + "/apis/ws.zcloud.cn/v1/events?token=" + login.Token
		conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
		if err != nil {
			t.Fatalf("events websocket through the follower: %v", err)
		}
		if status, body := do(t, revoke.method, leader.base+api+fmt.Sprintf(revoke.path, user), admin, revoke.body); status/100 != 2 {
			t.Fatalf("revoke %s: %d %s", user, status, body)
		}
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			_, _, err := conn.ReadMessage()
			if err == nil {
				continue
			}
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || !strings.Contains(ce.Text, revoke.reason) {
				t.Fatalf("%s's stream on the follower after the revocation: %v, want a 1008 close saying %q", user, err, revoke.reason)
			}
			break
		}
		conn.Close()
	}
}
