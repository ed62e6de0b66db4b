package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// The high availability of --store etcd, with the real binary: three
// replicas on loopback against one etcd.

// haTTL is the replicas' --leader-ttl in these tests; a new leader must
// serve within it plus haSlack of the old one's death.
const (
	haTTL   = 3 * time.Second
	haSlack = 5 * time.Second
)

// startReplica runs a replica of prefix on etcd, sharing keyFile; extra
// flags come last (and win).
func startReplica(t *testing.T, endpoint, prefix, keyFile string, extra ...string) *instance {
	t.Helper()
	inst := &instance{t: t, dir: t.TempDir(), addr: freePort(t), password: "ha-admin-pw", args: []string{
		"--store", "etcd", "--etcd-endpoints", endpoint, "--etcd-prefix", prefix, "--etcd-key-file", keyFile,
		"--admin-password", "ha-admin-pw", "--leader-ttl", haTTL.String(), "--health-interval", "1s",
	}}
	inst.args = append(inst.args, extra...)
	inst.URL = "http://" + inst.addr
	inst.start()
	t.Cleanup(func() {
		inst.stop(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("replica %s log:\n%s", inst.URL, inst.logText())
		}
	})
	return inst
}

// leads reads from base's /readyz whether it leads and whether it is
// ready (false, false when it does not answer; /readyz names the leader
// to the admin only).
func leads(base string) (leading, ready bool) {
	// Longer than /readyz's own bound on its checks (2 s), so that a
	// check waiting on etcd's election reads as "not ready", not as a
	// replica that stopped leading.
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(base + "/readyz")
	if err != nil {
		return false, false
	}
	var v struct{ Leading bool }
	_ = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	return v.Leading, resp.StatusCode == http.StatusOK
}

// waitLeaderAmong waits until every replica of replicas is ready and
// exactly one of them says it leads, and returns that one.
func waitLeaderAmong(t *testing.T, d time.Duration, replicas ...*instance) *instance {
	t.Helper()
	var leader *instance
	eventually(t, d, "one leader, every replica ready", func() (bool, string) {
		leader = nil
		var seen []string
		n := 0
		for _, r := range replicas {
			leading, ready := leads(r.URL)
			seen = append(seen, fmt.Sprintf("%s: leading %v ready %v", r.URL, leading, ready))
			if !ready {
				return false, strings.Join(seen, "; ")
			}
			if leading {
				leader, n = r, n+1
			}
		}
		return n == 1, strings.Join(seen, "; ")
	})
	return leader
}

// tryCreateUser creates user name through base and reports whether it was
// acknowledged (201); any failure (refused connection, 5xx) is not.
func tryCreateUser(base, token, name string) (bool, string) {
	body := fmt.Sprintf(`{"name":%q,"password":%q}`, name, digest("pw-"+name))
	req, _ := http.NewRequest(http.MethodPost, base+apiPath+"/users", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusCreated, fmt.Sprintf("%d %s", resp.StatusCode, b)
}

// users lists the user names base knows.
func userNames(t *testing.T, c *client) map[string]bool {
	t.Helper()
	status, raw := c.raw(http.MethodGet, apiPath+"/users", nil)
	var list struct{ Data []struct{ Name string } }
	if err := json.Unmarshal(raw, &list); err != nil || status != http.StatusOK {
		t.Fatalf("list users: %d %s", status, raw)
	}
	names := map[string]bool{}
	for _, u := range list.Data {
		names[u.Name] = true
	}
	return names
}

// TestHAReplicasFailover: three replicas elect one leader and the API
// works through each (a follower forwards REST calls and websockets); a
// write loop through every replica runs while the leader is killed with
// SIGKILL, a new leader serves within TTL + 5 s, and no acknowledged write
// is lost; the next leader paused (SIGSTOP) past its TTL is replaced, and
// once resumed it writes nothing (a write sent to it while paused is
// either refused or was forwarded to the new leader) and exits non-zero.
func TestHAReplicasFailover(t *testing.T) {
	etcd := etcdtest.Start(t)
	keyFile := filepath.Join(t.TempDir(), "seal.key")
	const prefix = "/ha/"
	first := startReplica(t, etcd.Endpoint, prefix, keyFile)
	waitLeaderAmong(t, 20*time.Second, first)
	replicas := []*instance{first, startReplica(t, etcd.Endpoint, prefix, keyFile), startReplica(t, etcd.Endpoint, prefix, keyFile)}
	leader := waitLeaderAmong(t, 20*time.Second, replicas...)
	if leader != first {
		t.Fatalf("leader %s, want the first replica %s", leader.URL, first.URL)
	}

	// The API through every replica: a login and a write through each, a
	// read of all of them through each, an event websocket through a
	// follower.
	follower := replicas[1]
	admin := follower.admin(t)
	events := admin.events(t)
	for i, r := range replicas {
		c := r.admin(t)
		if ok, answer := tryCreateUser(r.URL, c.token, fmt.Sprintf("via-%d", i)); !ok {
			t.Fatalf("create a user through %s: %s", r.URL, answer)
		}
	}
	for _, r := range replicas {
		c := &client{t: t, base: r.URL, token: admin.token}
		if names := userNames(t, c); !names["via-0"] || !names["via-1"] || !names["via-2"] {
			t.Fatalf("users through %s: %v; want via-0..2", r.URL, names)
		}
	}
	admin.importCluster("ha1", []byte(unreachableKubeconfig))
	waitEvent(t, events, "ha1", "Connecting", 10*time.Second)

	// A write loop through every replica across the leader's SIGKILL.
	var (
		mu    sync.Mutex
		acked []string
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for i, r := range replicas {
		token := admin.token
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("loop-%d-%d", i, n)
				if ok, _ := tryCreateUser(r.URL, token, name); ok {
					mu.Lock()
					acked = append(acked, name)
					mu.Unlock()
				} else {
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(2 * time.Second)
	killed := time.Now()
	first.stop(syscall.SIGKILL)
	survivors := replicas[1:]
	leader = waitLeaderAmong(t, haTTL+haSlack, survivors...)
	failover := time.Since(killed)
	t.Logf("failover took %s (leader killed with SIGKILL; --leader-ttl %s): %s leads", failover.Round(time.Millisecond), haTTL, leader.URL)
	time.Sleep(2 * time.Second) // the loop goes on through the survivors
	close(stop)
	wg.Wait()
	c := &client{t: t, base: survivors[0].URL, token: admin.token}
	names := userNames(t, c)
	lost := 0
	for _, n := range acked {
		if !names[n] {
			lost++
			t.Errorf("acknowledged write lost: user %s", n)
		}
	}
	t.Logf("write loop across the failover: %d writes acknowledged, %d lost", len(acked), lost)
	if len(acked) == 0 {
		t.Fatal("the write loop got no write acknowledged")
	}
	if s := c.status("ha1"); s == "" {
		t.Fatalf("the cluster imported before the failover is gone on the new leader")
	}

	// SIGSTOP of the leader past its TTL, a write sent to it meanwhile,
	// then SIGCONT.
	other := survivors[0]
	if other == leader {
		other = survivors[1]
	}
	paused := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	pending := make(chan [2]string, 1)
	go func() {
		ok, answer := tryCreateUser(leader.URL, admin.token, "while-paused")
		pending <- [2]string{fmt.Sprint(ok), answer}
	}()
	// While the paused leader can answer nothing, a follower still
	// answers reads from its own copy of the store.
	readWhilePaused(t, other.URL, admin.token, "ha1")
	newLeader := waitLeaderAmong(t, haTTL+haSlack, other)
	t.Logf("paused leader replaced after %s", time.Since(paused).Round(time.Millisecond))
	if ok, answer := tryCreateUser(newLeader.URL, admin.token, "after-pause"); !ok {
		t.Fatalf("write through the new leader: %s", answer)
	}
	if err := leader.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var res [2]string
	select {
	case res = <-pending:
	case <-time.After(30 * time.Second):
		t.Fatal("the write sent to the paused leader got no answer after SIGCONT")
	}
	select {
	case <-leader.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the resumed old leader did not step down and exit")
	}
	if code := leader.exitCode(); code == 0 {
		t.Fatalf("the resumed old leader exited %d, want non-zero", code)
	}
	if log := leader.logText(); !strings.Contains(log, "lost the leadership") {
		t.Fatalf("the old leader's log does not say it lost the leadership:\n%s", log)
	}
	names = userNames(t, &client{t: t, base: newLeader.URL, token: admin.token})
	t.Logf("the write sent to the paused leader: acknowledged %s (%s); stored %v", res[0], res[1], names["while-paused"])
	if (res[0] == "true") != names["while-paused"] {
		t.Fatalf("the write sent to the paused leader: acknowledged %s but stored %v", res[0], names["while-paused"])
	}
	// Not acknowledged: refused by the fence (503 NoLeader), or the old
	// leader exited before it read the request (no HTTP answer at all).
	if res[0] != "true" && res[1] != "" && res[1][0] >= '0' && res[1][0] <= '9' && !strings.HasPrefix(res[1], "503 ") {
		t.Fatalf("the write sent to the paused leader was refused with %s; want a 503 (NoLeader)", res[1])
	}
	if !names["after-pause"] {
		t.Fatal("the new leader's write is missing")
	}
}

// unreachableKubeconfig imports a cluster whose API server does not answer:
// it stays Connecting, which is all the failover test needs of it.
var unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:1
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: abc
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`

// readWhilePaused reads cluster through the follower at base while the
// leader is paused: the follower must answer it itself, at once.
func readWhilePaused(t *testing.T, base, token, cluster string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/apis/zcloud.cn/v1/clusters/"+cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("read %s through the follower %s while the leader is paused: %v", cluster, base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(server.ServedByHeader) != base {
		t.Fatalf("read %s through the follower %s while the leader is paused: %d (served by %q) %s", cluster, base,
			resp.StatusCode, resp.Header.Get(server.ServedByHeader), body)
	}
	t.Logf("read through a follower while the leader is paused: %s", time.Since(start).Round(time.Millisecond))
}
