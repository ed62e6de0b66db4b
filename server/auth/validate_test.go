package auth

import (
	"reflect"
	"testing"
)

// TestProjectsNormalised: every spelling of "every namespace" is stored as
// NamespaceAll, and grants that are the same after that are kept once.
func TestProjectsNormalised(t *testing.T) {
	tests := []struct {
		name string
		in   []Project
		want []Project
	}{
		{"empty namespace", []Project{{Cluster: "c"}}, []Project{{Cluster: "c", Namespace: NamespaceAll}}},
		{"legacy _all", []Project{{Cluster: "c", Namespace: "_all"}}, []Project{{Cluster: "c", Namespace: NamespaceAll}}},
		{"_all_namespaces", []Project{{Cluster: "c", Namespace: "_all_namespaces"}}, []Project{{Cluster: "c", Namespace: NamespaceAll}}},
		{"three spellings are one grant",
			[]Project{{Cluster: "c", Namespace: ""}, {Cluster: "c", Namespace: "_all"}, {Cluster: "c", Namespace: "_all_namespaces"}},
			[]Project{{Cluster: "c", Namespace: NamespaceAll}}},
		{"same grant twice", []Project{{Cluster: "c", Namespace: "web"}, {Cluster: "d"}, {Cluster: "c", Namespace: "web"}},
			[]Project{{Cluster: "c", Namespace: "web"}, {Cluster: "d", Namespace: NamespaceAll}}},
		{"a label namespace kept", []Project{{Cluster: "c", Namespace: "kube-system"}}, []Project{{Cluster: "c", Namespace: "kube-system"}}},
		{"none", nil, []Project{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := newTestUsers(t)
			created, err := u.Create(User{Name: "ann", Projects: tt.in}, PasswordDigest("pw"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(created.Projects, tt.want) {
				t.Fatalf("Create stored %+v, want %+v", created.Projects, tt.want)
			}
			updated, err := u.Update(User{Name: "ann", Projects: tt.in})
			if err != nil || !reflect.DeepEqual(updated.Projects, tt.want) {
				t.Fatalf("Update stored %+v, %v; want %+v", updated.Projects, err, tt.want)
			}
			got, err := u.Get("ann")
			if err != nil || !reflect.DeepEqual(got.Projects, tt.want) {
				t.Fatalf("Get = %+v, %v; want %+v", got.Projects, err, tt.want)
			}
		})
	}
}
