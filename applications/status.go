package applications

import (
	"sort"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// againstDesired measures an operator's status against what should run,
// whatever the operator itself knows of it: a desired version the
// environment does not have (a Deployment deleted by hand, containers
// never started) counts with its replicas and none ready, under the node
// "(missing)"; a version that runs but is not desired (being pruned) is
// left out; shares and levels are computed again over the desired
// versions. So level 100 always means every desired replica is ready.
func againstDesired(st *model.ApplicationStatus, req *model.ApplyRequest) *model.ApplicationStatus {
	out := &model.ApplicationStatus{App: st.App, Versions: []model.VersionStatus{}}
	have := make(map[string]model.VersionStatus, len(st.Versions))
	for _, v := range st.Versions {
		have[v.Version] = v
	}
	total := 0
	for _, d := range req.Deployments {
		total += *d.Replicas
	}
	ready, desired := 0, 0
	for _, d := range req.Deployments {
		n := *d.Replicas
		v, ok := have[d.Version]
		if !ok {
			v = model.VersionStatus{Version: d.Version, Nodes: []model.NodeStatus{}}
			if n > 0 {
				v.Nodes = append(v.Nodes, model.NodeStatus{Node: "(missing)", Desired: n, Healthy: model.HealthInfo{Level: 0}, Reason: "not created: the environment has nothing of this version"})
			}
		}
		v.Desired = n
		v.Ready = min(v.Ready, n)
		v.Healthy.Level = model.Level(v.Ready, n)
		v.Percent = 0
		if total > 0 {
			v.Percent = float64(n) * 100 / float64(total)
		}
		ready += v.Ready
		desired += n
		out.Versions = append(out.Versions, v)
	}
	sort.Slice(out.Versions, func(i, j int) bool { return out.Versions[i].Version < out.Versions[j].Version })
	out.Healthy.Level = model.Level(ready, desired)
	if len(req.Deployments) == 0 {
		out.Healthy.Level = 0
	}
	return out
}
