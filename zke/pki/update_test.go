package pki

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestEnsureUpdates(t *testing.T) {
	all := func(b *Bundle) []ID { return sortedIDs(b.Certs) }
	none := func(*Bundle) []ID { return nil }
	ids := func(ids ...ID) func(*Bundle) []ID { return func(*Bundle) []ID { return ids } }
	cases := []struct {
		name        string
		change      func(Input) Input
		wantIssued  func(first *Bundle) []ID
		wantReason  Reason
		wantDropped []ID
	}{
		{
			name: "controlplane added",
			change: func(in Input) Input {
				return withNode(in, Node{Name: "n2", Address: "10.0.0.2",
					Roles: []model.Role{model.RoleControlPlane, model.RoleEtcd, model.RoleWorker}})
			},
			wantIssued: ids(NodeID(KindAPIServer, "n1"), NodeID(KindAPIServer, "n2")),
		},
		{
			name: "worker added",
			change: func(in Input) Input {
				return withNode(in, Node{Name: "n5", Address: "10.0.0.5", Roles: []model.Role{model.RoleWorker}})
			},
			wantIssued: ids(NodeID(KindKubelet, "n5"), NodeID(KindKubeletServing, "n5")),
			wantReason: ReasonMissing,
		},
		{
			name:        "worker removed",
			change:      func(in Input) Input { return withoutNode(in, "n3") },
			wantIssued:  none,
			wantDropped: []ID{NodeID(KindKubeletServing, "n3"), NodeID(KindKubelet, "n3")}, // sorted
		},
		{
			name: "etcd node internal address changed",
			change: func(in Input) Input {
				return withNode(in, Node{Name: "n4", Address: "10.0.0.4", InternalAddress: "192.168.0.4",
					Roles: []model.Role{model.RoleEtcd}})
			},
			wantIssued: ids(NodeID(KindEtcdPeer, "n4"), NodeID(KindEtcdServer, "n4"), NodeID(KindKubeletServing, "n4")),
			wantReason: ReasonChanged,
		},
		{
			name:       "extra SAN added",
			change:     func(in Input) Input { in.ExtraSANs = append(in.ExtraSANs, "lb.example.com"); return in },
			wantIssued: ids(NodeID(KindAPIServer, "n1")),
			wantReason: ReasonChanged,
		},
		{
			name:       "cluster domain changed",
			change:     func(in Input) Input { in.ClusterDomain = "corp.local"; return in },
			wantIssued: ids(NodeID(KindAPIServer, "n1")),
			wantReason: ReasonChanged,
		},
		{
			name:       "service CIDR changed",
			change:     func(in Input) Input { in.ServiceCIDR = "10.96.0.0/12"; return in },
			wantIssued: ids(NodeID(KindAPIServer, "n1")),
			wantReason: ReasonChanged,
		},
		{
			name: "29 days before expiry",
			change: func(in Input) Input {
				in.Now = at(testNow().Add(LeafValidity - 29*24*time.Hour))
				return in
			},
			wantIssued: all,
			wantReason: ReasonExpiring,
		},
		{
			name: "31 days before expiry",
			change: func(in Input) Input {
				in.Now = at(testNow().Add(LeafValidity - 31*24*time.Hour))
				return in
			},
			wantIssued: none,
		},
		{
			name: "clock behind the certificates",
			change: func(in Input) Input {
				in.Now = at(testNow().Add(-2 * Backdate))
				return in
			},
			wantIssued: all,
			wantReason: ReasonNotYetValid,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, _ := mustEnsure(t, nil, testInput())
			in := tc.change(testInput())
			next, ch := mustEnsure(t, first, in)

			want := slices.Sorted(slices.Values(tc.wantIssued(first)))
			if got := issuedIDs(ch); !slices.Equal(got, want) {
				t.Errorf("issued %v\nwant   %v", got, want)
			}
			for _, is := range ch.Issued {
				if tc.wantReason != "" && is.Reason != tc.wantReason {
					t.Errorf("%s issued because %q, want %q", is.ID, is.Reason, tc.wantReason)
				}
			}
			if !slices.Equal(ch.Dropped, tc.wantDropped) {
				t.Errorf("dropped %v, want %v", ch.Dropped, tc.wantDropped)
			}
			if next.ClusterCA != first.ClusterCA || next.EtcdCA != first.EtcdCA ||
				next.FrontProxyCA != first.FrontProxyCA || next.ServiceAccount != first.ServiceAccount {
				t.Error("a CA or the service-account key changed")
			}
			for id, c := range next.Certs {
				reissued := slices.Contains(want, id)
				if old, ok := first.Certs[id]; ok && !reissued && old != c {
					t.Errorf("%s changed but is not in Changes", id)
				} else if reissued && old.Cert == c.Cert {
					t.Errorf("%s is in Changes but did not change", id)
				}
			}
			for _, id := range tc.wantDropped {
				if _, ok := next.Certs[id]; ok {
					t.Errorf("%s was not dropped", id)
				}
			}
			if again, ch := mustEnsure(t, next, in); !ch.Empty() || !reflect.DeepEqual(again, next) {
				t.Errorf("a further Ensure changed %v", ch.Issued)
			}
		})
	}
}

func TestChangesAffects(t *testing.T) {
	first, _ := mustEnsure(t, nil, testInput())
	in := withNode(testInput(), Node{Name: "n2", Address: "10.0.0.2",
		Roles: []model.Role{model.RoleControlPlane, model.RoleEtcd, model.RoleWorker}})
	_, ch := mustEnsure(t, first, in)
	for _, n := range in.Nodes {
		want := n.HasRole(model.RoleControlPlane)
		if got := ch.Affects(n); got != want {
			t.Errorf("Affects(%s) = %v, want %v", n.Name, got, want)
		}
	}
}

func TestLeafNeverOutlivesItsCA(t *testing.T) {
	in := testInput()
	in.CAValidity = 200 * 24 * time.Hour
	first, _ := mustEnsure(t, nil, in)
	caEnd := first.ClusterCA.NotAfter
	if got := first.Certs[ID(KindAdmin)].NotAfter; !got.Equal(caEnd) {
		t.Fatalf("admin expires %v, after its CA (%v)", got, caEnd)
	}
	// 10 days before the CA expires, reissuing cannot help: nothing churns.
	in.Now = at(caEnd.Add(-10 * 24 * time.Hour))
	if _, ch := mustEnsure(t, first, in); !ch.Empty() {
		t.Fatalf("reissued %v although no new certificate could outlive the CA", ch.Issued)
	}
}
