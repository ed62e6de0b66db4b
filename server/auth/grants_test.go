package auth

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

func TestProjectsClusterMustBeAClusterName(t *testing.T) {
	u, _ := newTestUsers(t)
	for _, tc := range []struct {
		cluster string
		field   string
	}{
		{"Prod", "projects[0].cluster"},
		{"prod_1", "projects[0].cluster"},
		{"-prod", "projects[0].cluster"},
		{strings.Repeat("a", 64), "projects[0].cluster"},
		{"../etc", "projects[0].cluster"},
		{"", "projects[0].cluster"},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			_, err := u.Create(User{Name: "ann", Projects: []Project{{Cluster: tc.cluster, Namespace: "default"}}}, PasswordDigest("pw"))
			fes := FieldErrors(err)
			if !errors.Is(err, ErrInvalid) || len(fes) != 1 || fes[0].Field != tc.field {
				t.Fatalf("Create with cluster %q: %v, want one field error on %s", tc.cluster, err, tc.field)
			}
			if _, err := u.Get("ann"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a refused create stored the user (Get err %v)", err)
			}
		})
	}
	if _, err := u.Create(User{Name: "ann", Projects: []Project{{Cluster: "prod-1", Namespace: NamespaceAll}}}, PasswordDigest("pw")); err != nil {
		t.Fatalf("a valid cluster name was refused: %v", err)
	}
	if _, err := u.Update(User{Name: "ann", Projects: []Project{{Cluster: "a.b"}}}); len(FieldErrors(err)) != 1 {
		t.Fatalf("Update with cluster a.b: %v, want a field error", err)
	}
}

func TestProjectAllNamespaces(t *testing.T) {
	for ns, want := range map[string]bool{"": true, "_all_namespaces": true, "_all": true, "default": false, "_all_": false, "all": false} {
		if got := (Project{Cluster: "c", Namespace: ns}).AllNamespaces(); got != want {
			t.Errorf("AllNamespaces(%q) = %v, want %v", ns, got, want)
		}
	}
}

func TestGrantsDroppedWithTheirCluster(t *testing.T) {
	u, db := newTestUsers(t)
	if _, err := u.Create(User{Name: "ann", Projects: []Project{{Cluster: "prod", Namespace: "default"}, {Cluster: "lab"}, {Cluster: "prod", Namespace: "web"}}}, PasswordDigest("pw")); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Create(User{Name: "bob", Projects: []Project{{Cluster: "lab"}}}, PasswordDigest("pw")); err != nil {
		t.Fatal(err)
	}
	before, _ := u.Get("ann")
	err := db.Update(func(tx storage.Tx) error { return u.DropClusterGrants(tx, "prod") })
	if err != nil {
		t.Fatal(err)
	}
	ann, err := u.Get("ann")
	if err != nil || !reflect.DeepEqual(ann.Projects, []Project{{Cluster: "lab", Namespace: NamespaceAll}}) {
		t.Fatalf("ann after prod deleted: %+v, %v; want only the lab grant", ann, err)
	}
	if ann.TokenStamp != before.TokenStamp {
		t.Error("dropping a grant changed the token stamp")
	}
	if _, err := u.Authenticate("ann", PasswordDigest("pw")); err != nil {
		t.Errorf("ann cannot log in after the drop: %v", err)
	}
	bob, _ := u.Get("bob")
	if !reflect.DeepEqual(bob.Projects, []Project{{Cluster: "lab", Namespace: NamespaceAll}}) {
		t.Errorf("bob's grants changed: %+v", bob.Projects)
	}

	// A failed transaction keeps the grants: the drop is part of the
	// cluster's delete, all or nothing.
	boom := errors.New("delete failed")
	err = db.Update(func(tx storage.Tx) error {
		if err := u.DropClusterGrants(tx, "lab"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if bob, _ := u.Get("bob"); len(bob.Projects) != 1 {
		t.Errorf("grants dropped by a transaction that failed: %+v", bob.Projects)
	}
}

func TestPruneGrants(t *testing.T) {
	u, _ := newTestUsers(t)
	if _, err := u.Create(User{Name: "ann", Projects: []Project{{Cluster: "gone"}, {Cluster: "here", Namespace: "a"}, {Cluster: "gone", Namespace: "b"}}}, PasswordDigest("pw")); err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	n, err := u.PruneGrants(func(c string) bool { asked[c]++; return c == "here" })
	if err != nil || n != 2 {
		t.Fatalf("PruneGrants = %d, %v; want 2 removed", n, err)
	}
	if asked["gone"] != 1 || asked["here"] != 1 {
		t.Errorf("exists asked %v, want each cluster once", asked)
	}
	ann, _ := u.Get("ann")
	if !reflect.DeepEqual(ann.Projects, []Project{{Cluster: "here", Namespace: "a"}}) {
		t.Fatalf("after prune: %+v", ann.Projects)
	}
	if n, err := u.PruneGrants(func(string) bool { return true }); err != nil || n != 0 {
		t.Fatalf("second prune = %d, %v", n, err)
	}
}
