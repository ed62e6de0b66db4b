package zke

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// goneMember is an etcd member whose node the configuration no longer
// has: its name, its peer URL, and the node when the last applied
// configuration knew it (nil for a member an unfinished update added).
type goneMember struct {
	name string
	peer string
	node *node
}

// goneMembers lists the members to take out: every member the state knows
// (joined, or added with its --initial-cluster fixed) whose node is not an
// etcd node of the configuration, with the peer URL of the applied node or,
// for a member an unfinished update added, the one in its own
// --initial-cluster.
func goneMembers(st State, etcdNodes, removed []node) []goneMember {
	keep := map[string]bool{}
	for _, n := range etcdNodes {
		keep[n.Name] = true
	}
	names := slices.Clone(st.EtcdMembers)
	for name := range st.EtcdInitialCluster {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []goneMember
	for _, name := range names {
		if keep[name] {
			continue
		}
		g := goneMember{name: name, peer: peerIn(st.EtcdInitialCluster[name], name)}
		for i := range removed {
			if removed[i].Name == name {
				g.node, g.peer = &removed[i], etcdPeerURL(removed[i])
			}
		}
		if g.peer != "" {
			out = append(out, g)
		}
	}
	return out
}

// peerIn returns name's peer URL in an --initial-cluster list
// ("a=https://10.0.0.1:2380,b=…"), or "".
func peerIn(initial, name string) string {
	for _, part := range strings.Split(initial, ",") {
		if n, url, ok := strings.Cut(part, "="); ok && n == name {
			return url
		}
	}
	return ""
}

// etcdRemoveMembers takes out of the etcd cluster, one at a time, every
// member whose node the configuration no longer has (validation keeps a
// majority of the members, so each removal can be agreed on), through a
// healthy kept member, and forgets it in the state, saved before the
// next. A removed node of the applied configuration is cleaned by the
// clean step; a member an unfinished update added is not in it, and the
// log says how to clean its host by hand. The API servers stop listing a
// removed member when the controlplane step applies their new spec. A
// member already gone (an interrupted earlier run removed it) is only
// forgotten.
func (r *run) etcdRemoveMembers(ctx context.Context, rep *workflow.Reporter, etcdNodes []node) error {
	for _, gone := range goneMembers(r.snapshot(), etcdNodes, r.removedNodes()) {
		var kept []string
		for _, n := range joinedNodes(etcdNodes, r.snapshot().EtcdMembers) {
			kept = append(kept, n.Name)
		}
		rep.Report(gone.name, "etcd member remove")
		err := poll(ctx, waitOn{rep: rep, node: gone.name}, etcdHealthTimeout, "etcd member "+gone.name+" removed", func(ctx context.Context) (bool, error) {
			via, err := r.healthyEtcdMember(ctx, kept)
			if err != nil {
				return false, err
			}
			list, err := r.etcdMembers(ctx, via)
			if err != nil {
				return false, fmt.Errorf("etcd member list on %s: %w", via.Name, err)
			}
			m := findMember(list, gone.peer)
			if m == nil {
				return true, nil
			}
			// etcd refuses (503) a reconfiguration that it cannot
			// commit yet; that passes. Any other refusal is final.
			_, err = r.etcdCall(ctx, via, "/v3/cluster/member/remove", etcdMemberIDBody(m.ID))
			if err != nil && !isUnavailable(err) {
				return false, stopPolling(fmt.Errorf("etcd member remove %s through %s: %w", m.ID.Hex(), via.Name, err))
			}
			return false, err
		})
		if err != nil {
			return &workflow.NodeError{Node: gone.name, Err: err}
		}
		r.update(func(s *State) {
			s.EtcdMembers = slices.DeleteFunc(s.EtcdMembers, func(name string) bool { return name == gone.name })
			delete(s.EtcdInitialCluster, gone.name)
		})
		if err := r.save(ctx); err != nil {
			return err
		}
		rep.Report(gone.name, "etcd member removed")
		if gone.node == nil {
			rep.Warnf(gone.name, "%s was added by an update that did not finish and is not in the applied configuration: zke does not clean its host; on it run: docker rm -f %s, then delete the etcd data directory under its prefixPath", gone.name, containerEtcd)
		}
	}
	return nil
}
