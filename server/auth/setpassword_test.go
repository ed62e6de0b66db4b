package auth

import (
	"errors"
	"testing"
	"time"
)

// TestSetPasswordChecksOutsideTheWriteTransaction: the old password's
// bcrypt check runs before the write transaction (which would otherwise
// hold the store's only writer), and a change that lands between the
// check and the write makes the slower request fail with ErrConflict
// instead of overwriting it.
func TestSetPasswordChecksOutsideTheWriteTransaction(t *testing.T) {
	u, _ := newTestUsers(t)
	if _, err := u.Create(User{Name: "ann"}, PasswordDigest("one")); err != nil {
		t.Fatal(err)
	}
	concurrent := make(chan error, 1)
	err := u.setPassword("ann", PasswordDigest("two"), func(record) error {
		// Another password change while this one is being checked: it
		// must not wait for this check.
		go func() { concurrent <- u.SetPassword("ann", PasswordDigest("three")) }()
		select {
		case err := <-concurrent:
			concurrent <- err
		case <-time.After(2 * time.Second):
			t.Error("another password change waited 2 s for this check: the check runs inside the write transaction")
		}
		return nil
	})
	select {
	case err := <-concurrent:
		if err != nil {
			t.Fatalf("the concurrent change: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the concurrent change never finished")
	}
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("the slower change = %v, want ErrConflict", err)
	}
	if _, err := u.Authenticate("ann", PasswordDigest("three")); err != nil {
		t.Fatalf("the change that won was overwritten: %v", err)
	}
	if _, err := u.Authenticate("ann", PasswordDigest("two")); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("the change that lost was written: %v", err)
	}

	// Without a race, a change still goes through.
	if err := u.ResetPassword("ann", PasswordDigest("three"), PasswordDigest("four")); err != nil {
		t.Fatal(err)
	}
	if err := u.ResetPassword("ann", PasswordDigest("three"), PasswordDigest("five")); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("reset with a stale old password = %v, want ErrBadCredentials", err)
	}
}
