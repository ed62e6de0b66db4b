package auth

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// newTestUsers returns Users over a real bbolt file, with the cheapest
// bcrypt cost so that the tests stay fast, and a fixed clock.
func newTestUsers(t *testing.T) (*Users, storage.Store) {
	t.Helper()
	db := storagetest.Open(t)
	u, err := NewUsers(db, UsersOptions{
		HashCost: bcrypt.MinCost,
		Clock:    func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return u, db
}

func TestEnsureAdminCreatesOnce(t *testing.T) {
	u, _ := newTestUsers(t)
	created, err := u.EnsureAdmin("first")
	if err != nil || !created {
		t.Fatalf("EnsureAdmin first = %v, %v; want true, nil", created, err)
	}
	created, err = u.EnsureAdmin("second")
	if err != nil || created {
		t.Fatalf("EnsureAdmin again = %v, %v; want false, nil", created, err)
	}
	if _, err := u.Authenticate(AdminName, PasswordDigest("first")); err != nil {
		t.Fatalf("login with first password: %v", err)
	}
	if _, err := u.Authenticate(AdminName, PasswordDigest("second")); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("login with second password: %v, want ErrBadCredentials", err)
	}
	if _, err := u.EnsureAdmin(""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("EnsureAdmin(\"\") = %v, want ErrInvalid", err)
	}
}

func TestSetAdminPasswordOverrides(t *testing.T) {
	u, _ := newTestUsers(t)
	if err := u.SetAdminPassword("created-by-flag"); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Authenticate(AdminName, PasswordDigest("created-by-flag")); err != nil {
		t.Fatalf("login after SetAdminPassword on empty store: %v", err)
	}
	first, _ := u.Get(AdminName)
	// The same password on every start keeps the admin's tokens valid.
	if err := u.SetAdminPassword("created-by-flag"); err != nil {
		t.Fatal(err)
	}
	if same, _ := u.Get(AdminName); same.TokenStamp != first.TokenStamp || first.TokenStamp == "" {
		t.Fatalf("token stamp %q -> %q after setting the same password, want it kept", first.TokenStamp, same.TokenStamp)
	}
	if err := u.SetAdminPassword("changed"); err != nil {
		t.Fatal(err)
	}
	changed, err := u.Authenticate(AdminName, PasswordDigest("changed"))
	if err != nil {
		t.Fatalf("login with overridden password: %v", err)
	}
	if changed.TokenStamp == first.TokenStamp {
		t.Fatal("a new admin password kept the token stamp: old tokens stay valid")
	}
	if _, err := u.Authenticate(AdminName, PasswordDigest("created-by-flag")); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("old password still works: %v", err)
	}
}

func TestAuthenticate(t *testing.T) {
	u, _ := newTestUsers(t)
	if _, err := u.Create(User{Name: "alice"}, PasswordDigest("pw")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, user, digest string
		want               error
	}{
		{"ok", "alice", PasswordDigest("pw"), nil},
		{"wrong password", "alice", PasswordDigest("nope"), ErrBadCredentials},
		{"unknown user", "bob", PasswordDigest("pw"), ErrBadCredentials},
		{"plaintext password", "alice", "pw", ErrInvalid},
		{"uppercase digest", "alice", strings.ToUpper(PasswordDigest("pw")), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := u.Authenticate(tt.user, tt.digest)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Authenticate = %v, want %v", err, tt.want)
			}
			if tt.want == nil && got.Name != tt.user {
				t.Fatalf("Authenticate returned user %q", got.Name)
			}
		})
	}
}

func TestCreateValidation(t *testing.T) {
	u, _ := newTestUsers(t)
	good := PasswordDigest("pw")
	tests := []struct {
		name       string
		user       User
		digest     string
		wantFields []string
	}{
		{"empty name", User{Name: ""}, good, []string{"name"}},
		{"upper case name", User{Name: "Alice"}, good, []string{"name"}},
		{"leading dash", User{Name: "-a"}, good, []string{"name"}},
		{"trailing dash", User{Name: "a-"}, good, []string{"name"}},
		{"too long", User{Name: strings.Repeat("a", 64)}, good, []string{"name"}},
		{"plaintext password", User{Name: "a"}, "secret", []string{"password"}},
		{"project without cluster", User{Name: "a", Projects: []Project{{Namespace: "ns"}}}, good, []string{"projects[0].cluster"}},
		{"namespace not a label", User{Name: "a", Projects: []Project{{Cluster: "c", Namespace: "Kube_System"}}}, good, []string{"projects[0].namespace"}},
		{"namespace with a slash", User{Name: "a", Projects: []Project{{Cluster: "c", Namespace: "../x"}}}, good, []string{"projects[0].namespace"}},
		{"namespace too long", User{Name: "a", Projects: []Project{{Cluster: "c", Namespace: strings.Repeat("n", 64)}}}, good, []string{"projects[0].namespace"}},
		{"namespace _all_", User{Name: "a", Projects: []Project{{Cluster: "c", Namespace: "_all_"}}}, good, []string{"projects[0].namespace"}},
		{"everything wrong at once", User{Name: "A", Projects: []Project{{}}}, "x", []string{"name", "password", "projects[0].cluster"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := u.Create(tt.user, tt.digest)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Create = %v, want ErrInvalid", err)
			}
			var fields []string
			for _, fe := range FieldErrors(err) {
				fields = append(fields, fe.Field)
			}
			if !reflect.DeepEqual(fields, tt.wantFields) {
				t.Fatalf("fields = %v, want %v (err: %v)", fields, tt.wantFields, err)
			}
		})
	}
	if users, err := u.List(); err != nil || len(users) != 0 {
		t.Fatalf("invalid creates stored users: %v, %v", users, err)
	}
	if _, err := u.Create(User{Name: "a"}, good); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Create(User{Name: "a"}, good); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second Create = %v, want ErrDuplicate", err)
	}
}

func TestCRUD(t *testing.T) {
	u, db := newTestUsers(t)
	projects := []Project{{Cluster: "c1", Namespace: "default"}, {Cluster: "c2"}}
	created, err := u.Create(User{Name: "bob", Projects: projects}, PasswordDigest("pw"))
	if err != nil {
		t.Fatal(err)
	}
	if len(created.TokenStamp) != 32 {
		t.Fatalf("Create gave token stamp %q, want 16 random bytes in hex", created.TokenStamp)
	}
	want := User{Name: "bob", Projects: []Project{{Cluster: "c1", Namespace: "default"}, {Cluster: "c2", Namespace: NamespaceAll}}, CreatedAt: u.now(), TokenStamp: created.TokenStamp}
	if !reflect.DeepEqual(created, want) {
		t.Fatalf("Create = %+v, want %+v", created, want)
	}
	got, err := u.Get("bob")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
	}
	raw, err := db.Get(storage.BucketUsers, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), PasswordDigest("pw")) {
		t.Fatal("stored record holds the password digest in clear")
	}

	updated, err := u.Update(User{Name: "bob", Projects: []Project{{Cluster: "c3"}}, CreatedAt: time.Unix(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(updated.Projects, []Project{{Cluster: "c3", Namespace: NamespaceAll}}) || !updated.CreatedAt.Equal(u.now()) || updated.TokenStamp != created.TokenStamp {
		t.Fatalf("Update = %+v: want only projects changed", updated)
	}
	if _, err := u.Update(User{Name: "nobody"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Update unknown = %v, want ErrNotFound", err)
	}

	if _, err := u.EnsureAdmin("pw"); err != nil {
		t.Fatal(err)
	}
	list, err := u.List()
	if err != nil || len(list) != 2 || list[0].Name != AdminName || list[1].Name != "bob" {
		t.Fatalf("List = %+v, %v", list, err)
	}

	if err := u.Delete(AdminName); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("Delete admin = %v, want ErrPermissionDenied", err)
	}
	if err := u.Delete("bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Get("bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get deleted = %v, want ErrNotFound", err)
	}
	if err := u.Delete("bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete again = %v, want ErrNotFound", err)
	}
}

func TestPasswords(t *testing.T) {
	u, _ := newTestUsers(t)
	if _, err := u.Create(User{Name: "carol"}, PasswordDigest("one")); err != nil {
		t.Fatal(err)
	}
	if err := u.ResetPassword("carol", PasswordDigest("wrong"), PasswordDigest("two")); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("reset with wrong old = %v, want ErrBadCredentials", err)
	}
	if err := u.ResetPassword("carol", "", PasswordDigest("two")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reset without old = %v, want ErrInvalid", err)
	}
	if err := u.ResetPassword("carol", PasswordDigest("one"), "two"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("reset to plaintext = %v, want ErrInvalid", err)
	}
	if err := u.ResetPassword("carol", PasswordDigest("one"), PasswordDigest("two")); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Authenticate("carol", PasswordDigest("two")); err != nil {
		t.Fatalf("login after reset: %v", err)
	}
	if err := u.SetPassword("carol", PasswordDigest("three")); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Authenticate("carol", PasswordDigest("three")); err != nil {
		t.Fatalf("login after SetPassword: %v", err)
	}
	if err := u.SetPassword("nobody", PasswordDigest("x")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("SetPassword unknown = %v, want ErrNotFound", err)
	}
}

func TestConcurrentCreateOneWins(t *testing.T) {
	u, _ := newTestUsers(t)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = u.Create(User{Name: "dup"}, PasswordDigest("pw"))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrDuplicate):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d creates succeeded, want 1", ok)
	}
}

func TestIsAdmin(t *testing.T) {
	u, _ := newTestUsers(t)
	if !u.IsAdmin(AdminName) || u.IsAdmin("bob") {
		t.Fatal("IsAdmin wrong")
	}
}

func TestNewUsers(t *testing.T) {
	db := storagetest.Open(t)
	for _, cost := range []int{-1, bcrypt.MinCost - 1, bcrypt.MaxCost + 1} {
		if _, err := NewUsers(db, UsersOptions{HashCost: cost}); err == nil {
			t.Errorf("HashCost %d accepted", cost)
		}
	}
	u, err := NewUsers(db, UsersOptions{})
	if err != nil || u.cost != bcrypt.DefaultCost {
		t.Fatalf("zero options: cost %d, %v", u.cost, err)
	}
}

func TestOnPasswordResetCalledForAPIChangesOnly(t *testing.T) {
	db := storagetest.Open(t)
	var reset []string
	u, err := NewUsers(db, UsersOptions{HashCost: bcrypt.MinCost, OnPasswordReset: func(name string) { reset = append(reset, name) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.EnsureAdmin("first"); err != nil {
		t.Fatal(err)
	}
	if err := u.SetAdminPassword("second"); err != nil {
		t.Fatal(err)
	}
	if len(reset) != 0 {
		t.Fatalf("OnPasswordReset called for %v: the caller of EnsureAdmin and SetAdminPassword holds the plaintext", reset)
	}
	if err := u.ResetPassword(AdminName, PasswordDigest("wrong"), PasswordDigest("third")); !errors.Is(err, ErrBadCredentials) {
		t.Fatal(err)
	}
	if len(reset) != 0 {
		t.Fatalf("OnPasswordReset called after a refused reset: %v", reset)
	}
	if err := u.ResetPassword(AdminName, PasswordDigest("second"), PasswordDigest("third")); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Create(User{Name: "ann"}, PasswordDigest("pw")); err != nil {
		t.Fatal(err)
	}
	if err := u.SetPassword("ann", PasswordDigest("pw2")); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(reset, []string{AdminName, "ann"}) {
		t.Fatalf("OnPasswordReset calls = %v, want admin then ann", reset)
	}
}
