package server

import (
	"context"
	"errors"
	"testing"
)

// TestStreamsRevalidate: the registry ends the streams whose user is gone
// or whose token's stamp is no longer the user's, and leaves the others
// (and every stream of a user whose record could not be read).
func TestStreamsRevalidate(t *testing.T) {
	st := newStreams(StreamLimits{PerUser: 10, PerAddress: 10, Total: 10}, systemAlarms{})
	open := func(user, stamp string) (context.Context, *streamEntry) {
		ctx, cancel := context.WithCancelCause(context.Background())
		e, err := st.admit(user, stamp, "127.0.0.1", cancel)
		if err != nil {
			t.Fatal(err)
		}
		return ctx, e
	}
	kept, _ := open("ann", "s1")
	changed, _ := open("bob", "old")
	deleted, _ := open("cy", "s1")
	unreadable, _ := open("dee", "s1")
	// A stream is registered with its token's stamp: one admitted as
	// the copy of the store learns of its password change is ended by
	// the revalidation that follows, never passed over as unchecked
	// (the stamp used to be set only after the upgrade).
	admitting, _ := open("eve", "old")
	st.revalidate(func(user string) (string, bool, error) {
		switch user {
		case "ann":
			return "s1", true, nil
		case "eve":
			return "new", true, nil
		case "bob":
			return "new", true, nil
		case "dee":
			return "", false, errors.New("read failed")
		}
		return "", false, nil
	})
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"same stamp", kept, nil},
		{"password changed", changed, endPasswordChanged},
		{"user deleted", deleted, endUserDeleted},
		{"unreadable user", unreadable, nil},
		{"admitted during the change", admitting, endPasswordChanged},
	} {
		if got := context.Cause(tt.ctx); (tt.want == nil && got != nil) || (tt.want != nil && !errors.Is(got, tt.want)) {
			t.Errorf("%s: cause %v, want %v", tt.name, got, tt.want)
		}
	}
}
