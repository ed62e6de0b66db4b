package e2e

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/storage/etcdtest"
	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestHAInstallResumesOnTheNewLeader: a zke install started through a
// follower (REST forwarded) is carried on by the next leader when the
// leader running it is killed with SIGKILL mid-install: the new leader
// loads the state as a restart does, resumes the operation from its
// checkpoint, and the cluster ends Running. Its log, followed through the
// follower (which serves it from the store), comes on one connection
// across the failover, up to the result.
func TestHAInstallResumesOnTheNewLeader(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	etcd := etcdtest.Start(t)
	keyFile := filepath.Join(t.TempDir(), "seal.key")
	const prefix = "/ha-zke/"
	first := startReplica(t, etcd.Endpoint, prefix, keyFile)
	waitLeaderAmong(t, 20*time.Second, first)
	second := startReplica(t, etcd.Endpoint, prefix, keyFile)
	if leader := waitLeaderAmong(t, 20*time.Second, first, second); leader != first {
		t.Fatalf("leader %s, want %s", leader.URL, first.URL)
	}

	admin := second.admin(t)
	admin.mustDo(http.MethodPost, apiPath+"/clusters", clusterBody("c3", hosts[0].Gateway+":8080", hosts), http.StatusCreated)
	admin.waitStep(t, "c3", "etcd")
	// The install's log followed through the follower, which serves it
	// from the store: the stream outlives the leader's kill.
	followed := make(chan zkelogStream, 1)
	go func() { followed <- readZkelog(second.URL, admin.token, "c3", 15*time.Minute) }()

	killed := time.Now()
	first.stop(syscall.SIGKILL)
	waitLeaderAmong(t, haTTL+haSlack, second)
	t.Logf("failover during the install took %s", time.Since(killed).Round(time.Millisecond))
	if s := admin.status("c3"); s != "Creating" {
		t.Errorf("after the leader's kill -9 the cluster is %q on the new leader, want Creating (resumed)", s)
	}
	admin.waitStatus("c3", "Running", 10*time.Minute)
	t.Logf("install resumed by the new leader and Running %s after the kill", time.Since(killed).Round(time.Second))
	var live zkelogStream
	select {
	case live = <-followed:
	case <-time.After(2 * time.Minute):
		t.Fatal("the zkelog followed through the follower did not end within 2 minutes of Running")
	}
	if live.err != nil || live.code != websocket.CloseNormalClosure || len(live.frames) == 0 ||
		live.frames[len(live.frames)-1].Type != "result" || live.frames[len(live.frames)-1].Status != "Running" {
		t.Fatalf("the zkelog followed through the follower across the failover: close %d, err %v, last frames %v",
			live.code, live.err, tail(live.frames, 3))
	}
	t.Logf("zkelog followed through the follower across the failover: %d frames on one connection, ending with the result", len(live.frames))
	frames, _ := admin.followZkelog(t, "c3", 0, time.Minute, nil)
	connects := 0
	for _, f := range frames {
		if f.Type == "progress" && f.Step == "connect" && f.Message == "started" {
			connects++
		}
	}
	if connects != 2 {
		t.Errorf("the zkelog shows %d runs, want the interrupted one and the one the new leader resumed", connects)
	}
}

// zkelogStream is what one zkelog websocket carried until it closed.
type zkelogStream struct {
	frames []zkelogFrame
	code   int // the close code, -1 for none
	err    error
}

// readZkelog follows cluster's zkelog at base on one connection until the
// server closes it or d passes; it may run on any goroutine.
func readZkelog(base, token, cluster string, d time.Duration) zkelogStream {
	u := strings.Replace(base, "http://", "ws://", 1) + "/apis/ws.zcloud.cn/v1/clusters/" + cluster + "/zkelog?token=" + url.QueryEscape(token)
	conn, _, err := (&websocket.Dialer{HandshakeTimeout: 10 * time.Second}).Dial(u, nil)
	if err != nil {
		return zkelogStream{code: -1, err: err}
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	var out zkelogStream
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			out.code = -1
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				out.code = ce.Code
			} else {
				out.err = err
			}
			return out
		}
		var f zkelogFrame
		if err := json.Unmarshal(msg, &f); err != nil {
			out.err = err
			return out
		}
		out.frames = append(out.frames, f)
	}
}
