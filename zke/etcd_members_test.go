package zke

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func etcdNode(name, ip string) node {
	return node{Node: model.Node{Name: name, Address: ip, InternalAddress: ip}}
}

// memberListJSON is an answer of etcd v3.5.35's grpc-gateway to POST
// /v3/cluster/member/list: a started voter and a learner that has not
// started yet (no name, no client URLs).
const memberListJSON = `{"header":{"cluster_id":"15118495548433857066","member_id":"13668033151171901709","raft_term":"2"},
"members":[{"ID":"13668033151171901709","name":"host1","peerURLs":["https://10.0.0.1:2380"],"clientURLs":["https://10.0.0.1:2379"]},
{"ID":"18007382834921830978","peerURLs":["https://10.0.0.2:2380"],"isLearner":true}]}`

func TestDecodeMemberList(t *testing.T) {
	var resp struct {
		Members []etcdMember `json:"members"`
	}
	if err := json.Unmarshal([]byte(memberListJSON), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Members) != 2 {
		t.Fatalf("%d members", len(resp.Members))
	}
	voter, learner := resp.Members[0], resp.Members[1]
	if voter.ID != 13668033151171901709 || voter.IsLearner || !voter.started() {
		t.Errorf("voter %+v", voter)
	}
	if learner.ID != 18007382834921830978 || !learner.IsLearner || learner.started() {
		t.Errorf("learner %+v", learner)
	}
	if got := findMember(resp.Members, "https://10.0.0.2:2380"); got == nil || got.ID != learner.ID {
		t.Errorf("findMember = %+v", got)
	}
	if got := findMember(resp.Members, "https://10.0.0.9:2380"); got != nil {
		t.Errorf("findMember of an unknown peer = %+v", got)
	}
}

func TestEtcdIDJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    etcdID
		wantErr bool
	}{
		{`"18007382834921830978"`, 18007382834921830978, false},
		{`42`, 42, false},
		{`"0"`, 0, false},
		{`"-1"`, 0, true},
		{`"abc"`, 0, true},
		{`"18446744073709551616"`, 0, true}, // 2^64
	}
	for _, tt := range tests {
		var id etcdID
		err := json.Unmarshal([]byte(tt.in), &id)
		if (err != nil) != tt.wantErr || (!tt.wantErr && id != tt.want) {
			t.Errorf("unmarshal %s = %d, %v", tt.in, id, err)
		}
	}
	if got := etcdID(18007382834921830978).Hex(); got != "f9e71347f9fb7a42" {
		t.Errorf("Hex = %s", got)
	}
}

func TestEtcdRequestBodies(t *testing.T) {
	if got, want := etcdAddBody("https://10.0.0.2:2380"), `{"peerURLs":["https://10.0.0.2:2380"],"isLearner":true}`; got != want {
		t.Errorf("add body %s, want %s", got, want)
	}
	if got, want := etcdMemberIDBody(18007382834921830978), `{"ID":"18007382834921830978"}`; got != want {
		t.Errorf("promote body %s, want %s", got, want)
	}
}

func TestInitialClusterFor(t *testing.T) {
	h1, h2, h3 := etcdNode("host1", "10.0.0.1"), etcdNode("host2", "10.0.0.2"), etcdNode("host3", "10.0.0.3")
	all := []node{h1, h2, h3}
	started := func(id etcdID, n node) etcdMember {
		return etcdMember{ID: id, Name: n.Name, PeerURLs: []string{etcdPeerURL(n)}, ClientURLs: []string{etcdClientURL(n)}}
	}
	unstarted := func(id etcdID, peer string) etcdMember {
		return etcdMember{ID: id, PeerURLs: []string{peer}, IsLearner: true}
	}
	tests := []struct {
		name    string
		self    node
		list    []etcdMember
		want    string
		wantErr string // a part of the error; "" for none
	}{
		{
			name: "before member add: self is appended",
			self: h2, list: []etcdMember{started(1, h1)},
			want: "host1=https://10.0.0.1:2380,host2=https://10.0.0.2:2380",
		},
		{
			name: "after member add: self is the unnamed learner",
			self: h2, list: []etcdMember{started(1, h1), unstarted(2, etcdPeerURL(h2))},
			want: "host1=https://10.0.0.1:2380,host2=https://10.0.0.2:2380",
		},
		{
			name: "resumed after start: self is named already",
			self: h3, list: []etcdMember{started(1, h1), started(2, h2), started(3, h3)},
			want: "host1=https://10.0.0.1:2380,host2=https://10.0.0.2:2380,host3=https://10.0.0.3:2380",
		},
		{
			name: "unstarted member of another configured node takes that node's name",
			self: h3, list: []etcdMember{started(1, h1), unstarted(2, etcdPeerURL(h2)), unstarted(3, etcdPeerURL(h3))},
			want: "host1=https://10.0.0.1:2380,host2=https://10.0.0.2:2380,host3=https://10.0.0.3:2380",
		},
		{
			name: "started member no longer configured keeps its own name",
			self: h2, list: []etcdMember{started(1, h1), {ID: 9, Name: "old", PeerURLs: []string{"https://10.0.0.9:2380"}}},
			want: "host1=https://10.0.0.1:2380,host2=https://10.0.0.2:2380,old=https://10.0.0.9:2380",
		},
		{
			name: "unstarted member of no configured node is refused with its hex ID",
			self: h2, list: []etcdMember{started(1, h1), unstarted(255, "https://10.0.0.9:2380"), unstarted(2, etcdPeerURL(h2))},
			wantErr: "etcdctl member remove ff",
		},
		{
			name: "an empty name never reaches the flag",
			self: h3, list: []etcdMember{started(1, h1), {ID: 7, PeerURLs: []string{"https://10.0.0.7:2380"}}},
			wantErr: "https://10.0.0.7:2380, never started",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := initialClusterFor(tt.self, tt.list, all)
			if tt.wantErr != "" {
				var stray *strayMembersError
				if !errors.As(err, &stray) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a strayMembersError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if strings.Contains(got, ",=") || strings.HasPrefix(got, "=") {
				t.Errorf("unnamed entry in %s", got)
			}
		})
	}
}

func TestEtcdctlCommand(t *testing.T) {
	got := etcdctlCommand(etcdNode("host1", "10.0.0.1"), "member remove ff")
	for _, want := range []string{"docker exec etcd etcdctl", "--endpoints=https://10.0.0.1:2379", "--cacert=/etc/kubernetes/ssl/", "member remove ff"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q", got, want)
		}
	}
}

func TestAddLearner(t *testing.T) {
	const peer = "https://10.0.0.3:2380"
	unavailable := &httpStatusError{Method: "POST", URL: "https://10.0.0.1:2379/v3/cluster/member/add", Code: 503, Status: "503 Service Unavailable", Body: "etcdserver: unhealthy cluster"}
	refused := &httpStatusError{Method: "POST", URL: "https://10.0.0.1:2379/v3/cluster/member/add", Code: 400, Status: "400 Bad Request", Body: "etcdserver: peerURL exists"}
	others := []etcdMember{{ID: 1, Name: "n1", PeerURLs: []string{"https://10.0.0.1:2380"}}}
	withPeer := append(append([]etcdMember{}, others...), etcdMember{ID: 3, PeerURLs: []string{peer}, IsLearner: true})
	tests := []struct {
		name string
		// answers are add's results in order; committed[i] says whether
		// the i-th add took effect (then the next list shows the member).
		answers   []error
		committed []bool
		wantAdds  int
		wantErr   error // nil: success
	}{
		{"added at once", []error{nil}, []bool{true}, 1, nil},
		{"refused while the cluster settles, then added", []error{unavailable, unavailable, nil}, []bool{false, false, true}, 3, nil},
		{"a 503 that was committed after all is not added twice", []error{unavailable}, []bool{true}, 1, nil},
		{"a final refusal stops at once", []error{refused}, []bool{false}, 1, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adds, present := 0, false
			list := func(context.Context) ([]etcdMember, error) {
				if present {
					return withPeer, nil
				}
				return others, nil
			}
			add := func(context.Context) error {
				i := adds
				adds++
				if i >= len(tt.answers) {
					t.Fatalf("add called %d times, want %d", adds, len(tt.answers))
				}
				present = tt.committed[i]
				return tt.answers[i]
			}
			err := addLearner(context.Background(), waitOn{}, 20*time.Second, "n3", peer, list, add)
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("addLearner = %v, want %v", err, tt.wantErr)
			}
			if adds != tt.wantAdds {
				t.Errorf("add called %d times, want %d", adds, tt.wantAdds)
			}
		})
	}

	// Refused for longer than the bound: the wait ends, saying why.
	start := time.Now()
	err := addLearner(context.Background(), waitOn{}, 1500*time.Millisecond, "n3", peer,
		func(context.Context) ([]etcdMember, error) { return others, nil },
		func(context.Context) error { return unavailable })
	if err == nil || !strings.Contains(err.Error(), "unhealthy cluster") || time.Since(start) > 10*time.Second {
		t.Fatalf("addLearner against a cluster that never settles = %v after %s", err, time.Since(start))
	}
}
