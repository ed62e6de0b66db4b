package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// TestHASurvivesAnEtcdMember: with a 3-member etcd, killing the member
// that leads etcd's raft changes nothing for singlecloud: the same replica
// leads (no session lost, no step-down) for three TTLs after the kill, both
// replicas stay up, and writes through the follower go on (at most a short
// gap while etcd elects its own leader), none of the acknowledged lost.
func TestHASurvivesAnEtcdMember(t *testing.T) {
	members := etcdtest.StartCluster(t, 3)
	eps := etcdtest.Endpoints(members)
	keyFile := filepath.Join(t.TempDir(), "seal.key")
	const prefix = "/ha-member/"
	// The default lease: etcd's own election (about a second) must not
	// cost singlecloud its leader, however loaded the machine.
	ttl := "5s"
	first := startReplica(t, eps, prefix, keyFile, "--leader-ttl", ttl)
	waitLeaderAmong(t, 20*time.Second, first)
	second := startReplica(t, eps, prefix, keyFile, "--leader-ttl", ttl)
	if leader := waitLeaderAmong(t, 20*time.Second, first, second); leader != first {
		t.Fatalf("leader %s, want %s", leader.URL, first.URL)
	}
	admin := second.admin(t)

	var raftLeader *etcdtest.Server
	for _, m := range members {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Endpoint}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.Status(ctx, m.Endpoint)
		cancel()
		c.Close()
		if err == nil && st.Leader == st.Header.MemberId {
			raftLeader = m
		}
	}
	if raftLeader == nil {
		t.Fatal("no etcd member says it leads")
	}
	raftLeader.Stop()
	killed := time.Now()
	var acked []string
	failed, longestGap, gapStart := 0, time.Duration(0), time.Time{}
	for n := 0; time.Since(killed) < 15*time.Second; n++ {
		for _, r := range []*instance{first, second} {
			select {
			case <-r.done:
				t.Fatalf("replica %s exited after an etcd member was killed:\n%s", r.URL, r.logText())
			default:
			}
			if leading, _ := leads(r.URL); leading != (r == first) {
				t.Fatalf("%s says leading %v after an etcd member was killed; want %s unchanged as the leader", r.URL, leading, first.URL)
			}
		}
		name := fmt.Sprintf("member-loss-%d", n)
		if ok, _ := tryCreateUser(second.URL, admin.token, name); ok {
			acked = append(acked, name)
			if !gapStart.IsZero() {
				longestGap = max(longestGap, time.Since(gapStart))
				gapStart = time.Time{}
			}
		} else {
			failed++
			if gapStart.IsZero() {
				gapStart = time.Now()
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("etcd member (raft leader) killed: %d writes acknowledged, %d failed, longest gap %s; the same replica leads",
		len(acked), failed, longestGap.Round(time.Millisecond))
	if !gapStart.IsZero() || len(acked) == 0 {
		t.Fatalf("writes through the follower still fail %s after the etcd member was killed", time.Since(killed))
	}
	names := userNames(t, &client{t: t, base: first.URL, token: admin.token})
	for _, n := range acked {
		if !names[n] {
			t.Errorf("acknowledged write lost: user %s", n)
		}
	}
}
