package zke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// etcd brings up the etcd cluster one member at a time, each gated on its
// health: the first member starts alone; every other one is added through
// a healthy member (member add), then started with the membership it
// joins, so quorum is never at risk. Members that already joined are only
// re-checked.
func (r *run) etcd(ctx context.Context, rep *workflow.Reporter) error {
	etcdNodes := withRole(r.nodes, model.RoleEtcd)
	for i, n := range etcdNodes {
		st := r.snapshot()
		initial, joined := st.EtcdInitialCluster[n.Name], slices.Contains(st.EtcdMembers, n.Name)
		if initial == "" {
			if len(st.EtcdMembers) == 0 {
				initial = n.Name + "=" + etcdPeerURL(n)
			} else {
				var err error
				if initial, err = r.etcdJoin(ctx, rep, n, st.EtcdMembers); err != nil {
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
		clusterState := "existing"
		if initial == n.Name+"="+etcdPeerURL(n) {
			clusterState = "new"
		}
		if err := r.ensure(ctx, rep, n, r.etcdSpec(n, initial, clusterState)); err != nil {
			return err
		}
		if err := poll(ctx, etcdHealthTimeout, "etcd on "+n.Name+" healthy", func(ctx context.Context) (bool, error) {
			return r.etcdHealthy(ctx, n)
		}); err != nil {
			return nodeErr(n, err, r.containerLogsHint(ctx, n, containerEtcd))
		}
		if !joined {
			r.update(func(s *State) { s.EtcdMembers = append(s.EtcdMembers, n.Name) })
		}
		rep.Advance(float64(i+1)/float64(len(etcdNodes)), n.Name, "etcd member healthy")
	}
	return nil
}

// etcdMember is one entry of etcd's member list (grpc-gateway JSON).
type etcdMember struct {
	ID       string   `json:"ID"`
	Name     string   `json:"name"`
	PeerURLs []string `json:"peerURLs"`
}

// etcdJoin adds n to the cluster through a healthy member (unless an
// interrupted earlier run already did) and returns the --initial-cluster
// n must start with.
func (r *run) etcdJoin(ctx context.Context, rep *workflow.Reporter, n node, members []string) (string, error) {
	var via *node
	var lastErr error
	for _, name := range members {
		for _, m := range r.nodes {
			if m.Name == name {
				if ok, err := r.etcdHealthy(ctx, m); ok {
					mm := m
					via = &mm
				} else {
					lastErr = err
				}
			}
		}
		if via != nil {
			break
		}
	}
	if via == nil {
		return "", fmt.Errorf("etcd member add %s: no healthy member to add it through: %w", n.Name, errors.Join(errors.New("every member failed its health check"), lastErr))
	}
	list, err := r.etcdMembers(ctx, *via)
	if err != nil {
		return "", nodeErr(*via, fmt.Errorf("etcd member list: %w", err), "")
	}
	peer := etcdPeerURL(n)
	known := false
	for _, m := range list {
		if slices.Contains(m.PeerURLs, peer) {
			known = true
		}
	}
	if !known {
		rep.Report(n.Name, "etcd member add through "+via.Name)
		if _, err := r.etcdCall(ctx, *via, "/v3/cluster/member/add", fmt.Sprintf(`{"peerURLs":[%q]}`, peer)); err != nil {
			return "", nodeErr(*via, fmt.Errorf("etcd member add %s: %w", n.Name, err), "")
		}
		if list, err = r.etcdMembers(ctx, *via); err != nil {
			return "", nodeErr(*via, fmt.Errorf("etcd member list: %w", err), "")
		}
	}
	var parts []string
	for _, m := range list {
		name := m.Name
		if slices.Contains(m.PeerURLs, peer) {
			name = n.Name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, name+"="+u)
		}
	}
	if !known {
		found := false
		for _, p := range parts {
			found = found || strings.HasSuffix(p, "="+peer)
		}
		if !found {
			parts = append(parts, n.Name+"="+peer)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ","), nil
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
	return httpDo(ctx, hc, "POST", etcdClientURL(m)+path, body)
}

// etcdHealthy asks n's etcd for /health.
func (r *run) etcdHealthy(ctx context.Context, n node) (bool, error) {
	tlsCfg, err := r.clientTLS(pki.ID(pki.KindAPIServerEtcdClient), pki.KindEtcdCA, n.InternalAddress)
	if err != nil {
		return false, err
	}
	hc, err := r.tunnelClient(n, tlsCfg)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	body, err := httpDo(ctx, hc, "GET", etcdClientURL(n)+"/health", "")
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
