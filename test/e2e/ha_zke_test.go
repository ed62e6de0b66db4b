package e2e

import (
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage/etcdtest"
	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestHAInstallResumesOnTheNewLeader: a zke install started and followed
// through a follower (REST and zkelog forwarded) is carried on by the next
// leader when the leader running it is killed with SIGKILL mid-install: the
// new leader loads the state as a restart does, resumes the operation from
// its checkpoint, and the cluster ends Running.
func TestHAInstallResumesOnTheNewLeader(t *testing.T) {
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

	killed := time.Now()
	first.stop(syscall.SIGKILL)
	waitLeaderAmong(t, haTTL+haSlack, second)
	t.Logf("failover during the install took %s", time.Since(killed).Round(time.Millisecond))
	if s := admin.status("c3"); s != "Creating" {
		t.Errorf("after the leader's kill -9 the cluster is %q on the new leader, want Creating (resumed)", s)
	}
	admin.waitStatus("c3", "Running", 10*time.Minute)
	t.Logf("install resumed by the new leader and Running %s after the kill", time.Since(killed).Round(time.Second))
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
