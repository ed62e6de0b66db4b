package zke

import (
	"context"
	"fmt"
	"slices"

	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// handOffLeadership moves etcd's leadership away from n when n leads, to
// another started member, before n is restarted: a leader that goes away
// leaves the cluster without one for an election timeout (5 s), in which
// no API server can read or write and every /readyz fails; a moved
// leadership costs a heartbeat. It is best effort: on failure it warns
// and the restart goes on, quorum being kept either way.
func (r *run) handOffLeadership(ctx context.Context, rep *workflow.Reporter, n node, etcdNodes []node) {
	if err := r.moveLeader(ctx, n, etcdNodes); err != nil {
		rep.Warnf(n.Name, "etcd leadership not moved before the restart (%v): the cluster elects a new leader instead, a few seconds without writes", err)
	}
}

// moveLeader does handOffLeadership's work; nil when n does not lead or
// the leadership moved.
func (r *run) moveLeader(ctx context.Context, n node, etcdNodes []node) error {
	if len(etcdNodes) < 2 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*probeTimeout)
	defer cancel()
	cli, err := r.etcdClient(ctx, n)
	if err != nil {
		return err
	}
	defer cli.Close()
	status, err := cli.Status(ctx, etcdClientURL(n))
	if err != nil {
		return fmt.Errorf("status of %s: %w", n.Name, err)
	}
	if status.Leader != status.Header.MemberId {
		return nil
	}
	members, err := cli.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	joined := r.snapshot().EtcdMembers
	for _, m := range members.Members {
		if m.ID == status.Header.MemberId || m.IsLearner || m.Name == "" || !slices.Contains(joined, m.Name) {
			continue
		}
		if _, err := cli.MoveLeader(ctx, m.ID); err != nil {
			return fmt.Errorf("move the leadership to %s: %w", m.Name, err)
		}
		return nil
	}
	return fmt.Errorf("no other started member to lead")
}
