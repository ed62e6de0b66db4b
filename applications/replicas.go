package applications

import (
	"math"
	"slices"
	"sort"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// applyRequest turns a stored spec into what an operator applies: every
// deployment with its replicas resolved (a Percent of the spec's Replicas,
// shared out by largest remainder so the shares add up to the rounded
// total of the percents), and the spec's hash.
func applyRequest(app string, s model.ApplicationSpec, hash string) *model.ApplyRequest {
	req := &model.ApplyRequest{App: app, Version: s.Version, Namespace: s.Namespace, SpecHash: hash,
		Deployments: make([]model.VersionDeployment, len(s.Deployments))}
	shares := percentReplicas(s)
	for i, d := range s.Deployments {
		d.Command = slices.Clone(d.Command)
		d.Args = slices.Clone(d.Args)
		d.Env = slices.Clone(d.Env)
		d.Ports = slices.Clone(d.Ports)
		n := shares[i]
		if d.Replicas != nil {
			n = *d.Replicas
		}
		d.Replicas = &n
		req.Deployments[i] = d
	}
	return req
}

// percentReplicas returns, for each deployment given as a Percent, its
// replicas (others get 0): the largest-remainder share of Replicas.
func percentReplicas(s model.ApplicationSpec) []int {
	out := make([]int, len(s.Deployments))
	type rem struct {
		i    int
		frac float64
	}
	var rems []rem
	sumPct, given := 0.0, 0
	for i, d := range s.Deployments {
		if d.Percent == nil {
			continue
		}
		exact := float64(s.Replicas) * *d.Percent / 100
		out[i] = int(math.Floor(exact))
		given += out[i]
		sumPct += *d.Percent
		rems = append(rems, rem{i, exact - math.Floor(exact)})
	}
	target := int(math.Round(float64(s.Replicas) * sumPct / 100))
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].frac > rems[b].frac })
	for k := 0; given < target && k < len(rems); k++ {
		out[rems[k].i]++
		given++
	}
	return out
}
