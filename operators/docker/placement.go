package docker

import (
	"fmt"
	"sort"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// replica is one container a request asks for: replica Index of the
// deployment at Dep in the request, with its container name, and the host
// placement puts it on.
type replica struct {
	Dep     int
	Version string
	Index   int
	Name    string
	Host    string
}

// replicas returns a deployment's replica count; a nil or negative count
// is none (the request resolves every percent to a count before it comes
// here).
func replicas(d model.VersionDeployment) int {
	if d.Replicas == nil || *d.Replicas < 0 {
		return 0
	}
	return *d.Replicas
}

// place spreads the request's replicas over hostNames: with the hosts
// sorted by name, replica i of the k-th deployment (in request order) goes
// to host (offset_k + i) mod n, where offset_k is the sum of the replicas
// of the deployments before it. Consecutive replicas, of one version or
// the next, so land on consecutive hosts and every host gets its share;
// the same request on the same hosts always gives the same placement.
//
// Containers use the host's network, so a deployment with ports cannot
// put two replicas on one host: one with more replicas than hosts is
// refused.
func place(app string, deps []model.VersionDeployment, hostNames []string) ([]replica, error) {
	n := len(hostNames)
	for _, d := range deps {
		r := replicas(d)
		if r > 0 && n == 0 {
			return nil, fmt.Errorf("version %s: %d replicas and no reachable host to place them on", d.Version, r)
		}
		if len(d.Ports) > 0 && r > n {
			return nil, fmt.Errorf("version %s has ports and %d replicas but only %d reachable hosts: containers use the host's network, so two replicas of a version with ports cannot share a host; lower its replicas to at most %d or add hosts", d.Version, r, n, n)
		}
	}
	return spread(app, deps, hostNames), nil
}

// spread is place's rule without its checks; with no host it places
// nothing.
func spread(app string, deps []model.VersionDeployment, hostNames []string) []replica {
	sorted := append([]string(nil), hostNames...)
	sort.Strings(sorted)
	n := len(sorted)
	if n == 0 {
		return nil
	}
	var out []replica
	offset := 0
	for k, d := range deps {
		r := replicas(d)
		for i := 0; i < r; i++ {
			out = append(out, replica{
				Dep:     k,
				Version: d.Version,
				Index:   i,
				Name:    containerName(app, d.Version, i),
				Host:    sorted[(offset+i)%n],
			})
		}
		offset += r
	}
	return out
}

// byHost groups replicas by their host.
func byHost(rs []replica) map[string][]replica {
	out := map[string][]replica{}
	for _, r := range rs {
		out[r.Host] = append(out[r.Host], r)
	}
	return out
}
