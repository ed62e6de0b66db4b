package zke

import (
	"context"
	"fmt"
	"slices"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// etcdRemoveMembers takes out of the etcd cluster, one at a time, every
// member whose node an update removed (validation keeps a majority of the
// members, so each removal can be agreed on), through a healthy kept
// member, and forgets it in the state, saved before the next. The removed
// node's containers and data are cleaned by the clean step; the API
// servers stop listing it when the controlplane step applies their new
// spec. A member already gone (an interrupted earlier run removed it) is
// only forgotten.
func (r *run) etcdRemoveMembers(ctx context.Context, rep *workflow.Reporter, etcdNodes []node) error {
	for _, gone := range r.removedNodes() {
		st := r.snapshot()
		if !slices.Contains(st.EtcdMembers, gone.Name) && st.EtcdInitialCluster[gone.Name] == "" {
			continue
		}
		var kept []string
		for _, n := range etcdNodes {
			if slices.Contains(st.EtcdMembers, n.Name) {
				kept = append(kept, n.Name)
			}
		}
		peer := etcdPeerURL(gone)
		rep.Report(gone.Name, "etcd member remove")
		err := poll(ctx, waitOn{rep: rep, node: gone.Name}, etcdHealthTimeout, "etcd member "+gone.Name+" removed", func(ctx context.Context) (bool, error) {
			via, err := r.healthyEtcdMember(ctx, kept)
			if err != nil {
				return false, err
			}
			list, err := r.etcdMembers(ctx, via)
			if err != nil {
				return false, fmt.Errorf("etcd member list on %s: %w", via.Name, err)
			}
			m := findMember(list, peer)
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
			return nodeErr(gone, err, "")
		}
		r.update(func(s *State) {
			s.EtcdMembers = slices.DeleteFunc(s.EtcdMembers, func(name string) bool { return name == gone.Name })
			delete(s.EtcdInitialCluster, gone.Name)
		})
		if err := r.save(ctx); err != nil {
			return err
		}
		rep.Report(gone.Name, "etcd member removed")
	}
	return nil
}
