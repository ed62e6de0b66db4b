package zke

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/zke/pki"
)

// etcdID is an etcd member ID. etcd's grpc-gateway encodes the uint64 as a
// decimal string in JSON ({"ID":"1366…"}); a bare number is accepted too.
type etcdID uint64

// UnmarshalJSON accepts "123" and 123.
func (id *etcdID) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("etcd member ID %s: %w", b, err)
	}
	*id = etcdID(v)
	return nil
}

// MarshalJSON writes the decimal string etcd's gateway expects.
func (id etcdID) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatUint(uint64(id), 10) + `"`), nil
}

// Hex is the ID as etcdctl prints and takes it (etcdctl member remove).
func (id etcdID) Hex() string { return strconv.FormatUint(uint64(id), 16) }

// etcdMember is one entry of etcd's member list (grpc-gateway JSON of
// etcdserverpb.Member). Name and ClientURLs stay empty until the member
// has started and published them.
type etcdMember struct {
	ID         etcdID   `json:"ID"`
	Name       string   `json:"name"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	IsLearner  bool     `json:"isLearner"`
}

// started reports whether the member has run at least once (it publishes
// its name when it starts).
func (m etcdMember) started() bool { return m.Name != "" }

// findMember returns the member with peer URL peer, or nil.
func findMember(list []etcdMember, peer string) *etcdMember {
	for i := range list {
		if slices.Contains(list[i].PeerURLs, peer) {
			return &list[i]
		}
	}
	return nil
}

// etcdAddBody is the body of POST /v3/cluster/member/add that adds peer
// as a learner: it replicates the data but does not vote, so a member
// that never comes up cannot cost the cluster its quorum.
func etcdAddBody(peer string) string {
	b, _ := json.Marshal(struct {
		PeerURLs  []string `json:"peerURLs"`
		IsLearner bool     `json:"isLearner"`
	}{[]string{peer}, true})
	return string(b)
}

// etcdMemberIDBody is the body of POST /v3/cluster/member/promote and
// /v3/cluster/member/remove: the member's ID.
func etcdMemberIDBody(id etcdID) string {
	b, _ := json.Marshal(struct {
		ID etcdID `json:"ID"`
	}{id})
	return string(b)
}

// initialClusterFor is the --initial-cluster with which self joins the
// cluster whose members are list (self included once it was added; if it
// is not there yet it is appended, as member add will make it). A member
// that never started has no name: its name is taken from the configured
// etcd node whose peer URL it has. One that matches no configured node
// is refused: it would be listed as "=https://…", and it is a leftover
// the admin must remove by hand.
func initialClusterFor(self node, list []etcdMember, etcdNodes []node) (string, error) {
	byPeer := map[string]string{}
	for _, n := range etcdNodes {
		byPeer[etcdPeerURL(n)] = n.Name
	}
	selfPeer := etcdPeerURL(self)
	byPeer[selfPeer] = self.Name
	var parts []string
	stray := &strayMembersError{Node: self.Name}
	hasSelf := false
	for _, m := range list {
		name := m.Name
		if slices.Contains(m.PeerURLs, selfPeer) {
			name, hasSelf = self.Name, true
		}
		if name == "" {
			for _, u := range m.PeerURLs {
				if byPeer[u] != "" {
					name = byPeer[u]
					break
				}
			}
		}
		if name == "" {
			stray.Members = append(stray.Members, fmt.Sprintf("member %s (peer %s, never started)", m.ID.Hex(), strings.Join(m.PeerURLs, ",")))
			stray.IDs = append(stray.IDs, m.ID.Hex())
			continue
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	if len(stray.IDs) > 0 {
		return "", stray
	}
	if !hasSelf {
		parts = append(parts, self.Name+"="+selfPeer)
	}
	slices.Sort(parts)
	return strings.Join(parts, ","), nil
}

// strayMembersError is returned when the etcd cluster lists members that
// were added but never started and that belong to no configured node: a
// new member could not be given a correct --initial-cluster.
type strayMembersError struct {
	Node    string
	Members []string
	IDs     []string
}

func (e *strayMembersError) Error() string {
	cmds := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		cmds[i] = "etcdctl member remove " + id
	}
	return fmt.Sprintf("cannot add etcd member %s: the etcd cluster has %s, which belongs to no configured node; "+
		"remove it on a healthy member (%s), then retry", e.Node, strings.Join(e.Members, ", "), strings.Join(cmds, "; "))
}

// etcdctlCommand is how an admin runs etcdctl args against n's etcd from
// n's shell, with the certificates zke put there.
func etcdctlCommand(n node, args string) string {
	return fmt.Sprintf("docker exec %s etcdctl --endpoints=%s --cacert=%s --cert=%s --key=%s %s",
		containerEtcd, etcdClientURL(n), sslPath(pki.KindEtcdCA.CertFile()),
		sslPath(pki.KindEtcdServer.CertFile()), sslPath(pki.KindEtcdServer.KeyFile()), args)
}

// addLearner adds the member with peer URL peer as a learner, through
// list and add (etcd's member list and member add), within timeout.
// etcd refuses (503) a reconfiguration until every voting member has
// been connected for a few seconds, as it is right after the previous
// member joined; that refusal passes and the add is tried again. A 503
// may also be a timed-out request that was committed after all, so every
// attempt first looks whether the member is there. Any other refusal is
// final.
func addLearner(ctx context.Context, on waitOn, timeout time.Duration, name, peer string,
	list func(context.Context) ([]etcdMember, error), add func(context.Context) error) error {
	return poll(ctx, on, timeout, "etcd member add "+name+" as a learner", func(ctx context.Context) (bool, error) {
		members, err := list(ctx)
		if err != nil {
			return false, fmt.Errorf("etcd member list: %w", err)
		}
		if findMember(members, peer) != nil {
			return true, nil
		}
		err = add(ctx)
		if err != nil && !isUnavailable(err) {
			return false, stopPolling(err)
		}
		return err == nil, err
	})
}
