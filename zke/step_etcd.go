package zke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// etcd brings up the etcd cluster one member at a time, each gated on its
// health. The first member starts alone. Every other one is added through
// a healthy member as a learner (it replicates but does not vote, so a
// member that never comes up cannot cost the cluster its quorum), started
// with the membership it joins, promoted to a voter once it has caught
// up, and health-gated. A run that was interrupted at any point picks up
// from what etcd reports: a member already added is not added again, a
// learner is promoted, a voter is only health-checked.
func (r *run) etcd(ctx context.Context, rep *workflow.Reporter) error {
	etcdNodes := withRole(r.nodes, model.RoleEtcd)
	downgrading, err := r.etcdVersionsFor(ctx, rep, etcdNodes)
	if err != nil {
		return err
	}
	if joined := joinedNodes(etcdNodes, r.snapshot().EtcdMembers); downgrading && len(joined) < len(etcdNodes) {
		// etcd admits no new member during a downgrade: the members
		// move to the image first, then etcd ends it.
		for _, n := range joined {
			if err := r.etcdMemberUp(ctx, rep, n, etcdNodes); err != nil {
				return err
			}
		}
		if err := r.waitEtcdDowngradeOver(ctx, rep, r.snapshot().EtcdMembers); err != nil {
			return err
		}
	}
	for i, n := range etcdNodes {
		if err := r.etcdMemberUp(ctx, rep, n, etcdNodes); err != nil {
			return err
		}
		rep.Advance(float64(i+1)/float64(len(etcdNodes)), n.Name, "etcd member healthy")
	}
	return r.etcdRemoveMembers(ctx, rep, etcdNodes)
}

// etcdMemberUp makes n a healthy voting member.
func (r *run) etcdMemberUp(ctx context.Context, rep *workflow.Reporter, n node, etcdNodes []node) error {
	st := r.snapshot()
	initial, joined := st.EtcdInitialCluster[n.Name], slices.Contains(st.EtcdMembers, n.Name)
	if initial == "" {
		if len(st.EtcdMembers) == 0 {
			initial = etcdAlone(n)
		} else {
			var err error
			if initial, err = r.etcdJoin(ctx, rep, n, st.EtcdMembers, etcdNodes); err != nil {
				return err
			}
		}
		r.update(func(s *State) {
			if s.EtcdInitialCluster == nil {
				s.EtcdInitialCluster = map[string]string{}
			}
			s.EtcdInitialCluster[n.Name] = initial
		})
		// Saved before the member starts: a crash between member
		// add and start must find this membership on the next run.
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	if err := r.ensure(ctx, rep, n, r.etcdSpec(n, initial, etcdClusterState(n, initial))); err != nil {
		return err
	}
	if !joined && etcdClusterState(n, initial) == "existing" {
		if err := r.etcdPromote(ctx, rep, n, st.EtcdMembers); err != nil {
			return err
		}
	}
	if err := poll(ctx, waitOn{rep: rep, node: n.Name}, etcdHealthTimeout, "etcd on "+n.Name+" healthy", func(ctx context.Context) (bool, error) {
		return r.etcdHealthy(ctx, n)
	}); err != nil {
		return nodeErr(n, err, r.containerLogsHint(ctx, n, containerEtcd))
	}
	if !joined {
		r.update(func(s *State) { s.EtcdMembers = append(s.EtcdMembers, n.Name) })
	}
	return nil
}

// etcdAlone is the --initial-cluster of a first member n, alone.
func etcdAlone(n node) string { return n.Name + "=" + etcdPeerURL(n) }

// etcdClusterState is the --initial-cluster-state of member n started
// with initial: new for the first member, alone, else existing.
func etcdClusterState(n node, initial string) string {
	if initial == etcdAlone(n) {
		return "new"
	}
	return "existing"
}

// etcdJoin adds n to the cluster as a learner through a healthy member
// (unless an interrupted earlier run already did) and returns the
// --initial-cluster n must start with. Members that were added but never
// started and belong to no configured node are refused before anything
// changes.
func (r *run) etcdJoin(ctx context.Context, rep *workflow.Reporter, n node, members []string, etcdNodes []node) (string, error) {
	via, err := r.healthyEtcdMember(ctx, members)
	if err != nil {
		return "", nodeErr(n, fmt.Errorf("etcd member add: %w", err), "")
	}
	list, err := r.etcdMembers(ctx, via)
	if err != nil {
		return "", nodeErr(via, fmt.Errorf("etcd member list: %w", err), "")
	}
	if _, err := initialClusterFor(n, list, etcdNodes); err != nil {
		return "", workflow.UserFixable(nodeErr(via, err, "run on "+via.Name+": "+etcdctlCommand(via, "member list")+" to see the members"))
	}
	peer := etcdPeerURL(n)
	if findMember(list, peer) == nil {
		rep.Report(n.Name, "etcd member add (learner) through "+via.Name)
		err := addLearner(ctx, waitOn{rep: rep, node: n.Name}, etcdHealthTimeout, n.Name, peer,
			func(ctx context.Context) ([]etcdMember, error) { return r.etcdMembers(ctx, via) },
			func(ctx context.Context) error {
				_, err := r.etcdCall(ctx, via, "/v3/cluster/member/add", etcdAddBody(peer))
				return err
			})
		if err != nil {
			return "", nodeErr(via, err, "")
		}
		if list, err = r.etcdMembers(ctx, via); err != nil {
			return "", nodeErr(via, fmt.Errorf("etcd member list: %w", err), "")
		}
		if findMember(list, peer) == nil {
			return "", nodeErr(via, fmt.Errorf("etcd member add %s: %s does not list it afterwards", n.Name, via.Name), "")
		}
	}
	initial, err := initialClusterFor(n, list, etcdNodes)
	if err != nil {
		return "", workflow.UserFixable(nodeErr(via, err, ""))
	}
	return initial, nil
}

// etcdPromote waits until the started learner n has caught up with the
// leader and promotes it to a voter, bounded by etcdHealthTimeout (etcd
// refuses the promotion until the learner is in sync). A member that is
// a voter already (promoted by an interrupted earlier run, or added as a
// voter by an older zke) is left as it is.
func (r *run) etcdPromote(ctx context.Context, rep *workflow.Reporter, n node, members []string) error {
	peer := etcdPeerURL(n)
	promoted := false
	err := poll(ctx, waitOn{rep: rep, node: n.Name}, etcdHealthTimeout, "etcd learner "+n.Name+" promoted", func(ctx context.Context) (bool, error) {
		via, err := r.healthyEtcdMember(ctx, members)
		if err != nil {
			return false, err
		}
		list, err := r.etcdMembers(ctx, via)
		if err != nil {
			return false, fmt.Errorf("etcd member list on %s: %w", via.Name, err)
		}
		m := findMember(list, peer)
		if m == nil {
			return false, stopPolling(errEtcdMemberGone)
		}
		if !m.IsLearner {
			return true, nil
		}
		if _, err := r.etcdCall(ctx, via, "/v3/cluster/member/promote", etcdMemberIDBody(m.ID)); err != nil {
			return false, fmt.Errorf("promote learner %s: %w", m.ID.Hex(), err)
		}
		promoted = true
		return true, nil
	})
	if errors.Is(err, errEtcdMemberGone) {
		// Forget the membership fixed when n was added: the next run
		// adds n again, which needs an empty data directory.
		r.update(func(s *State) { delete(s.EtcdInitialCluster, n.Name) })
		return workflow.UserFixable(nodeErr(n, fmt.Errorf("etcd member %s (%s): %w", n.Name, peer, err),
			fmt.Sprintf("on %s run docker rm -f %s and delete %s, then retry", n.Name, containerEtcd, n.dir(dirEtcdData))))
	}
	if err != nil {
		return nodeErr(n, err, r.containerLogsHint(ctx, n, containerEtcd))
	}
	if promoted {
		rep.Report(n.Name, "etcd learner promoted to voting member")
	}
	return nil
}

// healthyEtcdMember returns the first of the named joined members whose
// etcd answers healthy.
func (r *run) healthyEtcdMember(ctx context.Context, members []string) (node, error) {
	var errs []error
	for _, name := range members {
		for _, m := range r.nodes {
			if m.Name != name {
				continue
			}
			ok, err := r.etcdHealthy(ctx, m)
			if ok {
				return m, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
		}
	}
	return node{}, fmt.Errorf("no healthy etcd member to work through: %w", errors.Join(append(errs, errors.New("every member failed its health check"))...))
}

// etcdMembers lists the members as seen by member m.
func (r *run) etcdMembers(ctx context.Context, m node) ([]etcdMember, error) {
	body, err := r.etcdCall(ctx, m, "/v3/cluster/member/list", "{}")
	if err != nil {
		return nil, err
	}
	var resp struct {
		Members []etcdMember `json:"members"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode member list: %w", err)
	}
	return resp.Members, nil
}

// etcdCall posts body to path on m's etcd, through m's SSH connection,
// authenticated as the API server's etcd client.
func (r *run) etcdCall(ctx context.Context, m node, path, body string) ([]byte, error) {
	return r.etcdRequest(ctx, m, "POST", path, body)
}

// etcdRequest sends one request to m's etcd as etcdCall does.
func (r *run) etcdRequest(ctx context.Context, m node, method, path, body string) ([]byte, error) {
	tlsCfg, err := r.clientTLS(pki.ID(pki.KindAPIServerEtcdClient), pki.KindEtcdCA, m.InternalAddress)
	if err != nil {
		return nil, err
	}
	hc, err := r.tunnelClient(m, tlsCfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return httpDo(ctx, hc, method, etcdClientURL(m)+path, body)
}

// etcdHealthy asks n's etcd for /health.
func (r *run) etcdHealthy(ctx context.Context, n node) (bool, error) {
	body, err := r.etcdRequest(ctx, n, "GET", "/health", "")
	if err != nil {
		return false, err
	}
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return false, fmt.Errorf("decode /health: %w", err)
	}
	if h.Health != "true" {
		return false, fmt.Errorf("etcd reports unhealthy: %s", h.Reason)
	}
	return true, nil
}
