package pki

import (
	"crypto/x509"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// testNow is the fixed time the tests issue certificates at.
func testNow() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

// at is a clock stopped at t.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// testInput is a four-node cluster: n1 controlplane+etcd with a distinct
// internal address, n2 etcd+worker, n3 a worker reached by DNS name, n4
// etcd only.
func testInput() Input {
	return Input{
		ClusterName:   "c1",
		ClusterDomain: "cluster.local",
		ServiceCIDR:   "10.43.0.0/16",
		Nodes: []Node{
			{Name: "n1", Address: "10.0.0.1", InternalAddress: "192.168.0.1",
				Roles: []model.Role{model.RoleControlPlane, model.RoleEtcd}},
			{Name: "n2", Address: "10.0.0.2", Roles: []model.Role{model.RoleEtcd, model.RoleWorker}},
			{Name: "n3", Address: "n3.example.com", Roles: []model.Role{model.RoleWorker}},
			{Name: "n4", Address: "10.0.0.4", Roles: []model.Role{model.RoleEtcd}},
		},
		ExtraSANs: []string{"api.example.com", "10.0.0.100"},
		Now:       at(testNow()),
	}
}

// mustEnsure runs Ensure and fails the test on error.
func mustEnsure(t testing.TB, prev *Bundle, in Input) (*Bundle, Changes) {
	t.Helper()
	b, ch, err := Ensure(prev, in)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return b, ch
}

// parse parses a stored certificate and fails the test on error.
func parse(t testing.TB, c Cert) *x509.Certificate {
	t.Helper()
	cert, err := c.X509()
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return cert
}

// issuedIDs are the IDs of ch.Issued, in order.
func issuedIDs(ch Changes) []ID {
	ids := make([]ID, len(ch.Issued))
	for i, is := range ch.Issued {
		ids[i] = is.ID
	}
	return ids
}

// sortedIDs returns the keys of m, sorted.
func sortedIDs[V any](m map[ID]V) []ID { return slices.Sorted(maps.Keys(m)) }

// withNode returns a copy of in whose node name is replaced by n (or
// appended when absent).
func withNode(in Input, n Node) Input {
	nodes := slices.Clone(in.Nodes)
	i := slices.IndexFunc(nodes, func(x Node) bool { return x.Name == n.Name })
	if i < 0 {
		nodes = append(nodes, n)
	} else {
		nodes[i] = n
	}
	in.Nodes = nodes
	return in
}

// withoutNode returns a copy of in without the node name.
func withoutNode(in Input, name string) Input {
	in.Nodes = slices.DeleteFunc(slices.Clone(in.Nodes), func(n Node) bool { return n.Name == name })
	return in
}
