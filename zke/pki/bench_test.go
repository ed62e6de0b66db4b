package pki

import (
	"fmt"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// fiveNodes is a five-node cluster: three controlplane+etcd nodes and two
// workers.
func fiveNodes() Input {
	in := testInput()
	in.Nodes = nil
	for i := 1; i <= 5; i++ {
		roles := []model.Role{model.RoleControlPlane, model.RoleEtcd}
		if i > 3 {
			roles = []model.Role{model.RoleWorker}
		}
		in.Nodes = append(in.Nodes, Node{Name: fmt.Sprintf("n%d", i), Address: fmt.Sprintf("10.0.0.%d", i), Roles: roles})
	}
	return in
}

// BenchmarkEnsureFromScratch measures a whole five-node PKI: 3 CAs, the
// service-account key and 26 leaves.
func BenchmarkEnsureFromScratch(b *testing.B) {
	in := fiveNodes()
	for b.Loop() {
		if _, _, err := Ensure(nil, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnsureUnchanged measures the check-only path every retry or
// update takes.
func BenchmarkEnsureUnchanged(b *testing.B) {
	in := fiveNodes()
	prev, _, err := Ensure(nil, in)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, ch, err := Ensure(prev, in); err != nil || !ch.Empty() {
			b.Fatal(err, ch)
		}
	}
}
